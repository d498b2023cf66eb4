"""The plugin author's guide (docs/plugins.md) stays true: every hook spec of both sides is
documented there with its real signature and implemented by some test, the guide's example
packages are the very files the suite pip-installs, and docs/targets.md's example is a valid
target file. Adding a hook without documenting and testing it fails here."""

import collections.abc
import inspect
import re
import typing
from pathlib import Path

import pytest

import tensorforge_measure.hookspecs as ops_hookspecs
from tensorforge import hookspecs as core_hookspecs
from tensorforge.hardware.target_file import target_from_toml
from tensorforge.testing import check_target

REPO = Path(__file__).resolve().parents[1]
GUIDE = REPO / "docs" / "plugins.md"
TARGETS = REPO / "docs" / "targets.md"
TESTS = Path(__file__).resolve().parent


def hook_specs():
    """name -> (side project, signature text) for every function marked as a hook spec."""
    specs = {}
    for project, modules in (
        (core_hookspecs.PROJECT, core_hookspecs.SPEC_MODULES),
        (ops_hookspecs.PROJECT, (ops_hookspecs,)),
    ):
        for module in modules:
            for name, fn in inspect.getmembers(module, inspect.isfunction):
                if hasattr(fn, f"{project}_spec"):
                    names = ", ".join(inspect.signature(fn).parameters)
                    specs[name] = (project, f"({names})")
    return specs


def spec_functions():
    return {
        name: fn
        for project, modules in (
            (core_hookspecs.PROJECT, core_hookspecs.SPEC_MODULES),
            (ops_hookspecs.PROJECT, (ops_hookspecs,)),
        )
        for module in modules
        for name, fn in inspect.getmembers(module, inspect.isfunction)
        if hasattr(fn, f"{project}_spec")
    }


@pytest.mark.parametrize("name", sorted(hook_specs()))
def test_each_hook_spec_is_typed(name):
    """As tox types its hook specs: every argument annotated, and the return type (None for
    the register-callback hooks), so mypy checks a plugin's implementation against it."""
    signature = inspect.signature(spec_functions()[name])
    assert signature.return_annotation is not inspect.Signature.empty, name
    for parameter in signature.parameters.values():
        assert parameter.annotation is not inspect.Parameter.empty, (name, parameter.name)
    if "_register_" in name:
        assert signature.return_annotation is None, name
        (register,) = signature.parameters.values()
        assert typing.get_origin(register.annotation) is collections.abc.Callable, (name, register.annotation)


def documented():
    """name -> signature text from the guide's '### `name(args)`' headings."""
    found = re.findall(r"^### `(\w+)(\(.*\))`$", GUIDE.read_text(encoding="utf-8"), re.MULTILINE)
    return dict(found)


def test_the_spec_modules_hold_both_sides_hooks():
    specs = hook_specs()
    assert {"tensorforge_register_workloads", "tensorforge_measure_register_builders"} <= set(specs)
    # every hook the plugin managers know about is a spec found above
    from tensorforge.host.plugin_host import PluginHost
    from tensorforge_measure.host import OpsHost

    for host in (PluginHost(load_entry_points=False), OpsHost(load_entry_points=False)):
        with_spec = {n for n, caller in vars(host.pm.hook).items() if getattr(caller, "spec", None)}
        assert with_spec <= set(specs)


@pytest.mark.parametrize("name", sorted(hook_specs()))
def test_each_hook_is_documented_with_its_real_signature(name):
    docs = documented()
    assert name in docs, f"docs/plugins.md has no '### `{name}(...)`' entry for hook {name}"
    assert docs[name] == hook_specs()[name][1], f"docs/plugins.md shows {name}{docs[name]}"


def test_the_guide_documents_no_hook_that_does_not_exist():
    assert set(documented()) <= set(hook_specs())


@pytest.mark.parametrize("name", sorted(hook_specs()))
def test_each_hook_is_implemented_by_some_test(name):
    """A hook nobody tests is a hook nobody knows works: some test under tests/ implements it,
    as a function (`def <hook>(`, as a plugin author writes it) or as a keyword of an
    in-process plugin module (`<hook>=lambda register: ...`)."""
    sources = "\n".join(p.read_text(encoding="utf-8") for p in TESTS.rglob("*.py"))
    implemented = rf"\bdef {name}\(|\b{name}\s*=\s*(lambda|hookimpl)\b"
    assert re.search(implemented, sources), f"no test implements hook {name}"


def test_the_guides_example_files_are_the_installed_test_packages():
    text = GUIDE.read_text(encoding="utf-8")
    blocks = re.findall(r"^<!-- file: (\S+) -->\n```\w*\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)
    paths = [path for path, _ in blocks]
    assert {
        "tests/plugins_external/tf_attention/pyproject.toml",
        "tests/plugins_external/tf_attention/tf_attention.py",
        "tests/plugins_external/tf_edge_npu/pyproject.toml",
        "tests/plugins_external/tf_edge_npu/tf_edge_npu.py",
        "tests/plugins_external/tf_attention/tests/test_tf_attention.py",
    } <= set(paths)
    for path, body in blocks:
        assert body == (REPO / path).read_text(encoding="utf-8"), f"docs/plugins.md copy of {path} is stale"


def test_the_guide_names_every_plugin_option_and_variable():
    text = GUIDE.read_text(encoding="utf-8")
    for needle in (
        "--plugins",
        "--disable-plugins",
        "--trace-hooks",
        "TENSORFORGE_PLUGINS",
        "TENSORFORGE_DISABLE",
        "TENSORFORGE_TRACE",
        "TENSORFORGE_SLOW_IMPORT_S",
        "fresh_host",
        "check_workload_kind",
        "check_target",
        "check_mapping_strategy",
        "assert_loaded",
        "tensorforge.testing.pytest_plugin",
        "tensorforge_host",
        "tensorforge_cli",
        "list-plugins",
    ):
        assert needle in text, needle


def test_the_target_file_example_in_the_docs_is_a_valid_target():
    text = TARGETS.read_text(encoding="utf-8")
    example = re.search(r"^## Format\n.*?^```toml\n(.*?)^```$", text, re.MULTILINE | re.DOTALL).group(1)
    target = target_from_toml(example, "docs/targets.md")
    assert (target.name, target.pe_array.units, target.default_operating_point) == ("my-npu", 256, "base")
    check_target(target, require_sources=False)
