"""POLICY plugins: a stranger's policy package (tests/plugins_external/tf_tail_latency), built
and pip-installed into a folder of its own, gives its verdicts in `gate` and in `report`
beside the built-in regression gate, which is itself a policy registered through the same
hook. In process: a verdict exists only with its evidence, the host refuses a malformed policy
naming its plugin, a policy is not asked without its declared evidence, and a policy that
raises costs one warning line, never the command."""

import json
import os
import shutil
import subprocess
import sys
import types
from importlib import metadata
from pathlib import Path

from golden import H200_RERUN, H200_RUN
import pytest
from cli_in_process import run_cli
from click.testing import CliRunner

from tensorforge.cli.main import make_cli
from tensorforge.host.plugin_host import PluginHost
from tensorforge_measure import host as hosts
from tensorforge_measure.api import NO_VERDICT, Policy, PolicyRequest, Verdict
from tensorforge_measure.hookspecs import hookimpl
from tensorforge_measure.host import OpsHost
from tensorforge_measure.policy.apply import decide, missing_evidence
from tensorforge_measure.policy.evidence import load_evidence

pytestmark = pytest.mark.usefixtures("clean_plugin_env")

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tests" / "plugins_external" / "tf_tail_latency"
BASE = H200_RUN
RERUN = H200_RERUN
LIMIT = 1.5


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """tf-tail-latency built and installed with pip into a folder of its own (offline, no
    build isolation), never into this environment."""
    root = tmp_path_factory.mktemp("policy-plugin")
    src = root / "src"
    shutil.copytree(PACKAGE, src, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    target = root / "site"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--disable-pip-version-check",
            "--quiet",
            "--target",
            str(target),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return target


def console(site, *args):
    """`tensorforge ARGS` with `site` on the path (as PYTHONPATH puts it), in this process
    (tests/cli_in_process.py: the console script's entry point, without a second of imports per
    command; the installed package is importable for the call only)."""
    env = {k: None for k in os.environ if k.startswith("TENSORFORGE_")}
    return run_cli(*args, env=env, cwd=ROOT, path=[site] if site is not None else [])


def expected_tail(path: Path) -> dict:
    """workload -> (verdict, ratio) as the policy's rule gives them, from the capture's numbers."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    out = {}
    for name, row in doc["measured"]["workloads"].items():
        ratio = row["stats"]["p90"] / row["stats"]["p50"]
        out[name] = ("TAIL OK" if ratio <= LIMIT else "HEAVY TAIL", ratio)
    return out


# ---------------------------------------------------------------- the installed package


def test_pip_installed_it_outside_this_environment(site):
    dist = next(metadata.distributions(path=[str(site)]))
    assert (dist.metadata["Name"], dist.version) == ("tf-tail-latency", "0.1.0")
    assert {(ep.group, ep.name) for ep in dist.entry_points} == {("tensorforge_measure", "tail-latency")}
    with pytest.raises(metadata.PackageNotFoundError):
        metadata.distribution("tf-tail-latency")
    proc = console(site, "list-plugins")
    assert proc.returncode == 0, proc.stderr
    rows = {line.split()[0]: line for line in proc.stdout.splitlines()[2:]}
    assert "tf-tail-latency 0.1.0" in rows["tail-latency"] and "policies: tail-latency" in rows["tail-latency"]
    # the built-ins arrive through the same hook
    assert "policies: energy-gate, regression-gate, right-sizing" in rows["policies"]


def test_its_verdicts_show_up_in_gate_beside_the_regression_gate(site):
    plain = console(None, "gate", BASE, RERUN)
    proc = console(site, "gate", BASE, RERUN)
    assert "Traceback" not in proc.stderr and proc.stderr == ""
    lines = proc.stdout.splitlines()
    gate_table = plain.stdout.splitlines()[:-1]
    assert lines[: len(gate_table)] == gate_table  # the gate's own table is unchanged
    assert lines[len(gate_table)] == "POLICY  tail-latency: every measured workload's p90 within 1.5x its p50"
    expected = expected_tail(RERUN)
    assert any(v == "HEAVY TAIL" for v, _ in expected.values()) and any(v == "TAIL OK" for v, _ in expected.values())
    for name, (verdict, ratio) in expected.items():
        row = next(line for line in lines if line.startswith(name + " ") and "x p50" in line)
        assert verdict in row and f"p90 is {ratio:.2f}x p50" in row and f"in {RERUN}" in row
    # a HEAVY TAIL fails the gate: exit 1, though the regression gate alone says 3 (no verdict)
    assert (plain.returncode, proc.returncode) == (3, 1)
    # the summary line counts the plugin's verdicts under its own name, after the gate's count
    tally = {v: sum(1 for verdict, _ in expected.values() if verdict == v) for v, _ in expected.values()}
    named = "tail-latency " + ", ".join(f"{n} {v}" for v, n in tally.items())
    assert lines[-1] == plain.stdout.splitlines()[-1].replace(
        "exit 3", f"{named}; failing verdicts of tail-latency; exit 1"
    )


def test_gate_json_carries_the_policy_verdicts(site):
    plain = json.loads(console(None, "gate", BASE, RERUN, "--json").stdout)
    data = json.loads(console(site, "gate", BASE, RERUN, "--json").stdout)
    assert "policies" not in plain
    assert {k: v for k, v in data.items() if k != "policies"} == plain
    expected = expected_tail(RERUN)
    assert {v["subject"]: v["verdict"] for v in data["policies"]} == {n: v for n, (v, _) in expected.items()}
    for v in data["policies"]:
        assert v["policy"] == "tail-latency" and v["evidence"] and v["fails"] == (v["verdict"] == "HEAVY TAIL")


def test_its_verdicts_show_up_in_the_report(site, tmp_path):
    proc = console(site, "report", BASE, "--format", "json", "-o", "-")
    assert proc.returncode == 0, proc.stderr
    facts = json.loads(proc.stdout)
    expected = expected_tail(BASE)
    assert {v["subject"]: v["verdict"] for v in facts["policy"]["verdicts"]} == {n: v for n, (v, _) in expected.items()}
    html = console(site, "report", BASE, "-o", "-").stdout
    assert "<h3>Policy tail-latency</h3>" in html
    assert all(f"p90 is {ratio:.2f}x p50" in html for _, ratio in expected.values())
    md = console(site, "report", BASE, "--format", "md", "-o", "-").stdout
    assert "Policy `tail-latency`:" in md and "- gemm_tiny: HEAVY TAIL (p90 is" in md
    # without the package the report is what it was: its facts are the same but for the
    # policy's verdicts, and its page names no tail-latency
    plain = json.loads(console(None, "report", BASE, "--format", "json", "-o", "-").stdout)
    assert all(v["policy"] != "tail-latency" for v in plain["policy"]["verdicts"])
    mine = [v for v in facts["policy"]["verdicts"] if v["policy"] != "tail-latency"]
    assert {**facts, "policy": {**facts["policy"], "verdicts": mine}} == plain
    assert "tail-latency" not in console(None, "report", BASE, "-o", "-").stdout


def test_without_its_evidence_it_is_not_asked(site, tmp_path):
    out = tmp_path / "nodevice.json"
    run = console(site, "run", "-t", "rtx3050-laptop", "-w", "gemm_tiny", "--backend", "torch-cuda", "-o", out)
    assert run.returncode == 0, run.stderr
    reason = json.loads(out.read_text())["measured"]["reason"]
    facts = json.loads(console(site, "report", out, "--format", "json", "-o", "-").stdout)
    assert facts["policy"]["verdicts"] == [
        {
            "policy": "tail-latency",
            "subject": "",
            "verdict": NO_VERDICT,
            "reason": f"no verdict: needs MEASURED in the candidate ({reason})",
            "evidence": [],
            "fails": False,
        }
    ]


def test_disabling_it_gives_the_plain_gate(site):
    proc = console(site, "--disable-plugins", "tail-latency", "gate", BASE, RERUN)
    assert (proc.returncode, proc.stdout) == (3, console(None, "gate", BASE, RERUN).stdout)


def test_disabling_the_built_in_policies_is_one_line(site):
    proc = console(None, "--disable-plugins", "policies", "gate", BASE, RERUN)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: policy 'regression-gate' is not installed")


# ---------------------------------------------------------------- the interface, in process


def test_a_verdict_exists_only_with_its_evidence():
    with pytest.raises(ValueError, match="names no evidence"):
        Verdict("p", "w", "PASS", "fine")
    with pytest.raises(ValueError, match="names no evidence"):
        Verdict("p", "w", "PASS", "fine", evidence=("  ",))
    with pytest.raises(ValueError, match="NO VERDICT cannot fail"):
        Verdict("p", "w", NO_VERDICT, "no verdict: nothing measured", fails=True)
    with pytest.raises(ValueError, match="non-empty reason"):
        Verdict("p", "w", NO_VERDICT, "")
    assert Verdict("p", "w", NO_VERDICT, "no verdict: nothing measured").evidence == ()
    assert Verdict("p", "w", "PASS", "fine", evidence=["MEASURED samples"]).evidence == ("MEASURED samples",)


class Simple(Policy):
    description = "a policy under test"

    def __init__(self, name="simple", requires=(), commands=("gate", "report"), result=None, error=None):
        self.name, self.requires, self.commands = name, requires, commands
        self.result, self.error, self.asked = result, error, 0

    def decide(self, request):
        self.asked += 1
        if self.error:
            raise self.error
        if self.result is not None:
            return self.result
        return [Verdict(self.name, "", "FINE", "looked", evidence=("MEASURED samples",))]


class NoDecide(Policy):
    name = "no-decide"


def ops_with(*policies):
    module = types.ModuleType("policies_under_test")

    @hookimpl
    def tensorforge_measure_register_policies(register):
        for policy in policies:
            register(policy)

    module.tensorforge_measure_register_policies = tensorforge_measure_register_policies
    return OpsHost(load_entry_points=False, extra_plugins=(("under-test", module),))


@pytest.mark.parametrize(
    "policy, problem",
    [
        (Simple(commands=("deploy",)), "must declare commands as a non-empty tuple of gate, report, rightsize"),
        (Simple(commands=()), "must declare commands as a non-empty tuple"),
        (Simple(requires=("vibes",)), "must declare requires as a tuple of candidate, baseline, captures, MEASURED"),
        (Simple(requires="MEASURED"), "must declare requires as a tuple"),
        (NoDecide(), "does not implement decide(request)"),
    ],
)
def test_the_host_refuses_a_malformed_policy_naming_its_plugin(policy, problem):
    host = ops_with(policy)
    (broken,) = host.broken()
    assert broken.name == "under-test" and f"plugin 'under-test': policy {policy.name!r} {problem}" in broken.error
    assert host.names("policies") == []


@pytest.fixture(scope="module")
def evidence():
    return load_evidence(BASE, "candidate")


def test_a_policy_is_not_asked_without_its_declared_evidence(evidence):
    policy = Simple(requires=("baseline", "candidate"))
    request = PolicyRequest("report", candidate=evidence)
    assert missing_evidence(policy, request) == "needs a baseline capture"
    assert decide(policy, request, print) == [Verdict("simple", "", NO_VERDICT, "no verdict: needs a baseline capture")]
    assert policy.asked == 0
    policy = Simple(requires=("candidate", "MEASURED", "CALIBRATED", "DIAGNOSTIC"))
    assert missing_evidence(policy, request) is None and len(decide(policy, request, print)) == 1
    assert (
        missing_evidence(Simple(requires=("captures",)), PolicyRequest("rightsize"))
        == "needs captures with measurements (--capture)"
    )


@pytest.mark.parametrize(
    "behaviour, warning",
    [
        (
            {"error": RuntimeError("table missing\nsecond line")},
            "warning: policy 'simple' failed, its verdicts are left out: RuntimeError: table missing",
        ),
        (
            {"result": ["PASS"]},
            "warning: policy 'simple' returned str, expected its own tensorforge_measure.api.Verdict "
            "objects; its verdicts are left out",
        ),
        (
            {"result": [Verdict("someone-else", "", NO_VERDICT, "no verdict: x")]},
            "warning: policy 'simple' returned a verdict of policy 'someone-else', expected its own",
        ),
    ],
)
def test_a_failing_policy_costs_one_line(evidence, behaviour, warning):
    warnings = []
    assert decide(Simple(**behaviour), PolicyRequest("gate", candidate=evidence), warnings.append) == []
    assert len(warnings) == 1 and warnings[0].startswith(warning)


def test_a_raising_policy_is_isolated_in_gate_and_report(evidence, monkeypatch, tmp_path):
    policies = (Simple("exploding", error=RuntimeError("boom")), Simple("steady"))
    real = OpsHost()
    module = types.ModuleType("more_policies")

    @hookimpl
    def tensorforge_measure_register_policies(register):
        for policy in policies:
            register(policy)

    module.tensorforge_measure_register_policies = tensorforge_measure_register_policies
    host = OpsHost(extra_plugins=(("more", module),))
    assert host.names("policies") == sorted(real.names("policies") + ["exploding", "steady"])
    monkeypatch.setattr(hosts, "ops_host", lambda core: host)
    cli = make_cli(lambda: PluginHost())
    result = CliRunner().invoke(cli, ["gate", str(BASE), str(RERUN)])
    assert result.exit_code == 3  # the regression gate's own no-verdicts; nothing failed
    assert result.stderr.splitlines() == [
        "warning: policy 'exploding' failed, its verdicts are left out: RuntimeError: boom"
    ]
    assert "POLICY  steady: a policy under test" in result.stdout and "FINE" in result.stdout
    report = CliRunner().invoke(cli, ["report", str(BASE), "--format", "json", "-o", "-"])
    assert report.exit_code == 0, report.output
    assert report.stderr.splitlines() == [
        "warning: policy 'exploding' failed, its verdicts are left out: RuntimeError: boom"
    ]
    facts = json.loads(report.stdout)
    assert [v["policy"] for v in facts["policy"]["verdicts"]] == ["steady"]
