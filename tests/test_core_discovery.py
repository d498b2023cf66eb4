"""The built-in plugins are found the way a stranger's would be: through entry points in group
'tensorforge', each from its own distribution, with what it registers."""

import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from tensorforge.hookspecs import ENTRY_POINT_GROUP
from tensorforge.host.plugin_host import PluginHost

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

# entry-point name -> (distribution, module, hooks, what it registers)
EXPECTED = {
    "gemm": ("tf-gemm", "tf_gemm.plugin", ("tensorforge_register_workloads",), {"workloads": ("gemm",)}),
    "conv2d": ("tf-conv2d", "tf_conv2d.plugin", ("tensorforge_register_workloads",), {"workloads": ("conv2d",)}),
    "transformer": (
        "tf-transformer",
        "tf_transformer.plugin",
        ("tensorforge_register_workloads",),
        {"workloads": ("sdpa", "transformer")},
    ),
    "rtx3050": ("tf-rtx3050", "tf_rtx3050.plugin", ("tensorforge_register_targets",), {"targets": ("rtx3050-laptop",)}),
    "builtin-mappings": (
        "tensorforge",
        "tensorforge.bound.mappings.plugin",
        ("tensorforge_register_mappings",),
        {"mappings": ("collective", "flash-attention", "streaming", "tiled-matmul", "vector-matmul")},
    ),
    "vector": (
        "tf-vector",
        "tf_vector.plugin",
        ("tensorforge_register_workloads",),
        {"workloads": ("activation", "elementwise", "norm", "softmax")},
    ),
    "collective": (
        "tf-collective",
        "tf_collective.plugin",
        ("tensorforge_register_workloads",),
        {"workloads": ("collective",)},
    ),
}


@pytest.fixture(scope="module")
def host():
    return PluginHost()


def _pyproject(path: Path) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_builtin_plugin_is_found_with_its_distribution_and_registrations(host, name):
    dist, module, hooks, registered = EXPECTED[name]
    report = host.reports[name]
    assert report.error is None
    assert report.side == "core"
    assert report.distribution == dist
    assert report.version == metadata.version(dist)
    assert report.module == module
    assert report.hooks == hooks
    assert report.registered == registered


@pytest.mark.parametrize("package", ["tf_gemm", "tf_conv2d", "tf_transformer", "tf_vector", "tf_rtx3050"])
def test_plugin_metadata_matches_its_own_pyproject(host, package):
    """Each plugin is its own distribution: name, version and entry point as its pyproject
    declares them (so an editable install of the plugin is what the host found)."""
    project = _pyproject(REPO / "plugins" / package / "pyproject.toml")["project"]
    ((ep_name, ep_value),) = project["entry-points"][ENTRY_POINT_GROUP].items()
    report = host.reports[ep_name]
    assert report.distribution == project["name"]
    assert report.version == project["version"] == "0.1.0"
    assert report.module == ep_value
    # and it really is an entry point of that distribution, not something injected
    dist_eps = {
        ep.name: ep.value for ep in metadata.distribution(project["name"]).entry_points if ep.group == ENTRY_POINT_GROUP
    }
    assert dist_eps == {ep_name: ep_value}


def test_builtin_mappings_come_from_the_tensorforge_distribution(host):
    project = _pyproject(REPO / "pyproject.toml")["project"]
    assert project["entry-points"][ENTRY_POINT_GROUP]["builtin-mappings"] == "tensorforge.bound.mappings.plugin"
    (ep,) = [ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == "builtin-mappings"]
    assert ep.dist.metadata["Name"] == "tensorforge"
    assert host.reports["builtin-mappings"].version == metadata.version("tensorforge")


def test_every_installed_core_plugin_loads_cleanly(host):
    # A broken installed plugin would print a warning on every `predict`: none is expected.
    assert host.broken() == []
    installed = {ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}
    assert set(host.reports) == installed
    assert set(EXPECTED) <= installed


def test_host_indexes_what_the_plugins_registered(host):
    assert {"gemm", "conv2d", "transformer"} <= set(host.names("workloads"))
    assert "rtx3050-laptop" in host.names("targets")
    assert {"tiled-matmul", "vector-matmul", "flash-attention", "streaming"} <= {m.name for m in host.mappings()}
    target = host.target("rtx3050-laptop")
    assert target.pe_array.units == 16
    assert target.pe_array.flops_per_clock["bf16"] == 512
    assert target.dram_capacity_bytes == 4 * 1024**3
    # presets are indexed across plugins, each pointing at the kind that owns it
    assert {"gemm_tiny", "gemm_large_square", "conv_resnet50_3x3", "transformer_decode"} <= set(host.preset_names())
    kind, fields = host.preset("gemm_large_square")
    assert kind.name == "gemm" and fields == {"m": 8192, "n": 8192, "k": 8192, "dtype": "bf16"}
    suite = host.default_suite()
    assert suite[:3] == ["conv_resnet50_3x3", "conv_resnet50_1x1", "conv_depthwise_3x3"]
    assert {"gemm_large_square", "gemm_tiny", "transformer_prefill", "transformer_decode"} <= set(suite)


def test_registration_order_follows_entry_point_names(host):
    # Loading is sorted by entry-point name, so reports and precedence are deterministic.
    names = list(host.reports)
    assert names == sorted(names)


def test_two_hosts_are_independent_and_identical():
    a, b = PluginHost(), PluginHost()
    assert a.reports == b.reports
    assert a.names("targets") == b.names("targets")
    assert a.target("rtx3050-laptop") == b.target("rtx3050-laptop")
    assert a.pm is not b.pm


def test_host_without_entry_points_has_nothing():
    empty = PluginHost(load_entry_points=False)
    assert empty.reports == {}
    assert empty.names("workloads") == empty.names("targets") == empty.names("mappings") == []
    assert empty.default_suite() == []


def _installed(entry_points) -> list[tuple]:
    return sorted((ep.group, ep.name, ep.value, ep.dist.name, ep.dist.version) for ep in entry_points)


def test_the_entry_points_read_from_the_metadata_folders_are_importlib_metadata_s(make_plugin):
    """tensorforge/host/entry_points.py reads entry_points.txt itself (a command line does not
    import importlib.metadata); it finds what importlib.metadata finds, a stranger's plugin on
    sys.path included, and is asked only where importlib.metadata is not loaded already."""
    from tensorforge.host import entry_points

    make_plugin("stranger-x", "VALUE = 1\n", dist="tf-stranger-x")
    groups = {ep.group for dist in metadata.distributions() for ep in dist.entry_points}
    theirs = _installed(
        entry_points.EntryPoint(ep.name, ep.value, ep.group, entry_points._MetadataDistribution(ep.dist))
        for group in groups
        for ep in metadata.entry_points(group=group)
    )
    mine = _installed(entry_points.scan())
    assert mine == theirs and ("tensorforge", "stranger-x") in {(g, n) for g, n, *_ in mine}
    assert ("tensorforge", "gemm", "tf_gemm.plugin", "tf-gemm", metadata.version("tf-gemm")) in mine
    assert _installed(entry_points.all_entry_points()) == theirs  # importlib.metadata is loaded here


def test_an_entry_point_loads_its_module_and_attribute_as_importlib_metadata_does(make_plugin):
    from tensorforge.host.entry_points import EntryPoint

    module = make_plugin("loads-x", "class Outer:\n    class Inner:\n        pass\n")
    assert EntryPoint("x", f"{module}:Outer.Inner [extra]", "tensorforge", None).load().__qualname__ == "Outer.Inner"
    assert EntryPoint("x", module, "tensorforge", None).load().__name__ == module
    with pytest.raises(ValueError, match="not 'module' or 'module:attribute'"):
        EntryPoint("x", "not a module!", "tensorforge", None).load()
