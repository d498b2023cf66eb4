"""The first commands a user types answer at once (the goal is `--help`, `predict` and refusals
within 0.3 s, benchmarks/startup.py times them): each runs without what it does not need.

* `--help`, a refusal of `-o`, a refusal of an unknown target and `targets list` import none of
  numpy, torch, cattrs, the estimate or importlib.metadata (plugin discovery reads the entry
  points itself: tensorforge/host/entry_points.py), nor any module of the measuring side beyond
  its plugin face (tensorforge_measure.core_plugin, whose commands load on first use) and, for
  `run`, the command's own modules, nor any of the measuring side's plugins (torch builders,
  backends);
* predicting one GEMM imports neither numpy nor cattrs: its two searches run in plain Python
  (tensorforge/bound/mappings/search.py: plain_python), and what it predicts is byte for byte what numpy's
  searches predict in this process, where numpy is loaded;
* the shipped coefficients read without cattrs are the ones cattrs reads;
* the plain-Python twins of the GEMM searches answer bit-identically to numpy's: property-based
  (hypothesis, derandomized) over the random shapes, residencies and machines of
  tests/test_search_soundness.py, warm and cold, and random GEMM shapes on every family's menu,
  compared by repr (a float's repr is its exact value, -0.0 too). numpy is loaded here, so the
  strategies themselves take numpy's path; the twins are called directly, the policy apart.

Each command line runs in a fresh interpreter (this one has imported everything by now) and is
judged by the modules it holds at the end, not by timing (a shared machine's timings vary)."""

import json
import subprocess
import sys

import attrs
import numpy as np  # this process predicts with numpy's searches (search.plain_python)
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from test_search_soundness import SETTINGS, matmul_cases

from tensorforge.bound.mappings.base import Residency, dram_bytes
from tensorforge.bound.mappings import search
from tensorforge.bound.mappings.matmul import TiledMatmul, choose
from tensorforge.bound.mappings.search import GridStrategy
from tensorforge.estimate import gemm, shipped
from tensorforge.estimate.coefficients import coefficients_from_data, coefficients_from_shipped
from tensorforge.estimate.menus import MENUS, SIMT_MODES

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

HEAVY = ("numpy", "torch", "mlflow", "pynvml", "matplotlib", "scipy", "cattrs", "importlib.metadata")
# the measuring side's face towards the Core: the package and the hooks that list its commands
MEASURE_FACE = {"tensorforge_measure", "tensorforge_measure.core_plugin"}
# what `run` reaches before it refuses an existing -o: its command module, the home and the rules
# of its destinations (the Ops side's plugins, its host and the signing key come after)
RUN_REACHES = {"commands", "commands.run", "home", "run", "run.destinations"}
GEMM = "gemm:m=4096,n=4096,k=4096"

PROBE = """
import json, sys
from tensorforge.cli.main import main

try:
    main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print(json.dumps({"exit": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def _run(tmp_path, *argv: str) -> tuple[int, str, list[str], str]:
    """(exit status, standard output, modules held at the end, standard error) of `argv`."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    *lines, last = proc.stderr.splitlines()
    seen = json.loads(last)
    return seen["exit"], proc.stdout, seen["modules"], "\n".join(lines)


def _heavy(modules: list[str], allowed=frozenset()) -> list[str]:
    ops_plugins = {ep.value.split(":")[0].split(".")[0] for ep in _measure_entry_points()}
    return [
        m
        for m in modules
        if any(m == h or m.startswith(h + ".") for h in HEAVY)
        or (m.startswith("tensorforge_measure") and m not in MEASURE_FACE and m not in allowed)
        or (m.split(".")[0] in ops_plugins and m.split(".")[0] not in _core_plugin_packages())
    ]


def _measure_entry_points():
    from tensorforge.host.entry_points import entry_points

    return entry_points("tensorforge_measure")


def _core_plugin_packages() -> set[str]:
    """Packages whose Core-side plugin every command line loads (tf_cpu serves both sides)."""
    from tensorforge.host.entry_points import entry_points

    return {ep.value.split(":")[0].split(".")[0] for ep in entry_points("tensorforge")}


def test_help_and_the_refusals_import_nothing_heavy(tmp_path):
    existing = tmp_path / "prediction.json"
    existing.write_text("{}", encoding="utf-8")
    code, out, modules, err = _run(tmp_path, "--help")
    assert code in (None, 0) and "Usage:" in out and _heavy(modules) == []
    for argv in (["predict", "-t", "h200", "-o", str(existing)], ["run", "-t", "rtx3050-laptop", "-o", str(existing)]):
        code, out, modules, err = _run(tmp_path, *argv)
        assert code == 2 and "already exists" in err, err
        allowed = {f"tensorforge_measure.{m}" for m in RUN_REACHES} if argv[0] == "run" else frozenset()
        assert _heavy(modules, allowed) == [], argv
    assert existing.read_text(encoding="utf-8") == "{}"
    code, out, modules, err = _run(tmp_path, "predict", "-t", "no-such-target")
    assert code == 2 and "unknown target 'no-such-target'" in err and _heavy(modules) == []
    code, out, modules, err = _run(tmp_path, "targets", "list")
    assert code == 0 and "h200" in out and _heavy(modules) == []
    # the modules behind the Ops commands' names, and the plugins of the measuring side, are a
    # real list here: the check above would pass vacuously without them
    assert {"tf_gemm", "tf_cuda"} <= {ep.value.split(".")[0] for ep in _measure_entry_points()}


def test_one_gemm_is_predicted_without_numpy_as_numpy_predicts_it(tmp_path, cli):
    code, out, modules, err = _run(tmp_path, "predict", "-t", "h200", "-w", GEMM)
    assert code == 0 and "exhaustive" in out, err
    assert _heavy(modules) == []
    for target in ("h200", "host-cpu"):
        code, out, modules, err = _run(tmp_path, "predict", "-t", target, "-w", GEMM, "--json")
        assert code == 0 and "numpy" not in modules, err  # (cattrs writes the JSON)
        assert "numpy" in sys.modules  # ... while this process predicts with numpy's searches
        here = CliRunner().invoke(cli, ["predict", "-t", target, "-w", GEMM, "--json"])
        assert here.exit_code == 0 and json.loads(out) == json.loads(here.stdout) and out == here.stdout


@pytest.mark.parametrize("family", sorted(shipped.shipped()))
def test_the_shipped_coefficients_read_without_cattrs_are_cattrs_own(family):
    data = json.loads(shipped.DATA.read_text(encoding="utf-8"))[family]
    plain, structured = coefficients_from_shipped(data, family), coefficients_from_data(data, family)
    assert repr(plain) == repr(structured) and plain == structured


def test_shipped_coefficients_that_cattrs_would_refuse_are_refused_in_its_words():
    data = json.loads(shipped.DATA.read_text(encoding="utf-8"))["nvidia-sm90"]
    broken = {**data, "gemm": {**data["gemm"], "stream_efficiency": 2.5}}
    with pytest.raises(Exception) as plain:
        coefficients_from_shipped(broken, "shipped x")
    with pytest.raises(Exception) as structured:
        coefficients_from_data(broken, "shipped x")
    assert str(plain.value) == str(structured.value) and "shipped x" in str(plain.value)


# -- the plain-Python twins of the GEMM searches (tensorforge/bound/mappings/search.py) -----------


@settings(max_examples=150, **SETTINGS)
@given(case=matmul_cases(), warm=st.booleans(), limit=st.one_of(st.just(16384), st.integers(1, 6000)))
def test_the_tiled_matmul_twin_chooses_what_numpy_chooses(case, warm, limit):
    p, machine, residency = case
    machine = attrs.evolve(machine, max_candidates=limit)
    residency = attrs.evolve(residency, warm=warm)
    strategy = TiledMatmul()
    twin = choose(strategy.name, p, machine, residency)
    size = len(strategy.space(p, machine)[0])
    if size > limit:  # a cut search is numpy's alone (a relaxation)
        assert twin is None
        return
    assert repr(twin) == repr(GridStrategy.explore(strategy, p, machine, residency))


def _gemm_on_an_h200():
    from tensorforge.bound.model import machine_for
    from tensorforge.hardware.target import datasheet_ceilings
    from tensorforge.host.plugin_host import PluginHost
    from tensorforge.workloads.problems import MatmulProblem, Tensor

    target = PluginHost().target("h200")
    machine = machine_for(target, datasheet_ceilings(target, target.operating_point(None).name), 16384)
    size = 4096 * 4096 * 2
    p = MatmulProblem(1, 4096, 4096, 4096, "bf16", 2, 2, 2, Tensor("A", size), Tensor("B", size), Tensor("C", size))
    return p, machine, Residency()


def test_the_twin_runs_only_within_the_budget_and_without_numpy(monkeypatch):
    p, machine, residency = _gemm_on_an_h200()
    monkeypatch.setattr(search, "_plain_left", 10**9)
    assert search.plain_python(1) is False  # numpy is loaded here: its path is the faster one
    monkeypatch.delitem(sys.modules, "numpy")
    assert search.plain_python(5) is True and search._plain_left == 10**9 - 5
    assert search.plain_python(10**9) is False  # beyond what is left
    search.numpy_from_now_on()
    assert search.plain_python(1) is False
    assert choose("tiled-matmul", p, machine, residency, take=lambda size: False) is None


@settings(max_examples=100, **SETTINGS)
@given(reads=st.floats(0, 1e12), writes=st.floats(0, 1e12), cache=st.sampled_from([0, 1 << 20, 60 << 20]))
def test_warm_dram_bytes_of_scalars_are_numpy_s(reads, writes, cache):
    machine = attrs.evolve(_gemm_on_an_h200()[1], cache_bytes=cache)
    warm = Residency(warm=True)
    expected = np.maximum(np.array([reads]) - float(cache), 0.0) + np.maximum(np.array([writes]) - float(cache), 0.0)
    assert repr(float(dram_bytes(reads, writes, machine, warm))) == repr(float(expected[0]))


@st.composite
def gemm_cases(draw):
    family = draw(st.sampled_from(sorted(MENUS)))
    mode = draw(st.sampled_from(["fp32", "tf32", "fp16", "bf16", "fp8"]))
    e = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1}[mode]
    sizes = st.one_of(st.integers(1, 300), st.integers(1, 40_000))
    batch, m, n, k = draw(st.one_of(st.just(1), st.integers(1, 64))), draw(sizes), draw(sizes), draw(sizes)
    shape = gemm.GemmShape(
        batch=batch,
        m=m,
        n=n,
        k=k,
        mode=mode,
        a_elem=e,
        b_elem=e,
        c_elem=e,
        a_bytes=float(batch * m * k * e),
        b_bytes=float(batch * k * n * e),
        c_bytes=float(batch * m * n * e),
        aligned=draw(st.booleans()),
        k_padded=draw(st.sampled_from([0, 0, k + 7])),
    )
    menu = MENUS[family]
    if mode in SIMT_MODES and draw(st.booleans()):
        menu = menu.for_mode(mode, batched=batch > 1)
    units = draw(st.one_of(st.sampled_from([1, 2, 20, 108, 132]), st.integers(1, 5000)))
    cache = draw(st.sampled_from([0.0, float(1 << 20), float(50 << 20)]))
    positive = st.floats(1e-3, 1e15)
    rates = gemm.GemmRates(
        unit_rate=draw(positive),
        efficiency=draw(st.floats(0.05, 1.0)),
        feed_bytes_per_s=draw(st.one_of(st.just(float("inf")), positive)),
        tile_overhead_s=draw(st.floats(0, 1e-5)),
        stream_bytes_per_s=draw(positive),
        launch_s=draw(st.floats(0, 1e-5)),
        prologue_s=draw(st.floats(0, 1e-5)),
        stream_fixed_s=draw(st.floats(0, 1e-5)),
    )
    return shape, menu, units, cache, rates


@settings(max_examples=200, **SETTINGS)
@given(case=gemm_cases())
def test_the_estimate_s_gemm_twin_matches_numpy_column_by_column(case):
    shape, menu, units, cache, rates = case
    arrays = gemm.geometry.__wrapped__(shape, menu, units, cache)  # numpy's: this process has it loaded
    lists = gemm.columns(gemm._configurations(shape, menu, units, cache))
    assert set(lists) == set(arrays)
    for key in arrays:
        assert repr(lists[key]) == repr(arrays[key].tolist()), key
    numpy_times, twin_times = gemm.times(arrays, rates), gemm.times(lists, rates)
    for key in numpy_times:
        assert repr(twin_times[key]) == repr(numpy_times[key].tolist()), key
    if lists["tm"]:
        i = gemm.best(arrays, rates)
        assert gemm.best(lists, rates) == i
        assert gemm.describe(lists, i) == gemm.describe(arrays, i)
        one = gemm.times(gemm.pick(lists, i), rates)
        assert repr({key: v[0] for key, v in one.items()}) == repr({key: v[i] for key, v in twin_times.items()})


def test_the_twin_breaks_ties_as_numpy_does_on_shipped_targets():
    """Small and thin shapes tie on latency and traffic across tiles and splits: the tie-break
    (larger tile, then fewer splits, then the enumeration order) decides, on real targets."""
    from tensorforge.bound.model import machine_for
    from tensorforge.hardware.target import datasheet_ceilings
    from tensorforge.host.plugin_host import PluginHost
    from tensorforge.workloads.problems import MatmulProblem, Tensor

    host, strategy, compared = PluginHost(), TiledMatmul(), 0
    for name in ("h200", "rtx3050-laptop", "host-cpu"):
        target = host.target(name)
        machine = machine_for(target, datasheet_ceilings(target, target.operating_point(None).name), 16384)
        for m, n, k, e in ((1, 64, 4096, 2), (64, 1, 64, 2), (16, 16, 16384, 4), (4096, 4096, 64, 2), (8, 8, 8, 1)):
            p = MatmulProblem(
                1,
                m,
                n,
                k,
                "fp16" if e == 2 else "fp32" if e == 4 else "fp8",
                e,
                e,
                e,
                Tensor("A", m * k * e),
                Tensor("B", k * n * e),
                Tensor("C", m * n * e),
            )
            if p.math_mode not in machine.compute:
                continue
            for residency in (Residency(), Residency(warm=True), Residency(resident=frozenset({"A", "B"}))):
                assert repr(choose(strategy.name, p, machine, residency)) == repr(
                    GridStrategy.explore(strategy, p, machine, residency)
                ), (name, m, n, k, residency)
                compared += 1
    assert compared >= 30
