"""The `tensorforge` command line, built in a factory; plugins add commands through a hook."""

import os
import sys
from typing import Callable, Optional, Tuple

import click

from . import __version__
from .errors import TensorForgeError, shorten
from .fileio import write_atomic
from .plugin_options import DISABLE, ONLY, TRACE, PluginOptions, set_env
from .plugins import PluginHost
from .render import table
from .serialize import canonical_json, to_data


class _Context:
    """Loads plugins once, on first use, so `--help` stays cheap."""

    def __init__(self, host_factory: Callable[[], PluginHost]):
        self._factory = host_factory
        self._host: Optional[PluginHost] = None
        self.builtin_commands: Tuple[str, ...] = ()

    @property
    def host(self) -> PluginHost:
        if self._host is None:
            self._host = self._factory()
        return self._host

    def refresh(self, cli: click.Group) -> None:
        """The root options (--plugins, --disable-plugins, --trace-hooks) set the environment
        after make_cli() loaded the plugins: load them again if the selection changed, and let
        them add their commands afresh. `main()` sets the environment before make_cli(), so
        the console script loads plugins once."""
        if self._host is None or getattr(self._host, "options", None) == PluginOptions.from_env():
            return
        old, self._host = self._host, None
        if self.host is old:       # a factory that hands out one fixed host: nothing to redo
            return
        for name in [n for n in cli.commands if n not in self.builtin_commands]:
            del cli.commands[name]
        self.host.call_add_commands(cli)


def warn_broken(host: PluginHost) -> None:
    for report in host.broken():
        click.echo(f"warning: plugin {report.name!r} is not loaded: {report.error}", err=True)
    for line in host.selection_problems():
        click.echo(f"warning: {line}", err=True)


def emit(data_or_text, output: Optional[str]) -> None:
    if output:
        write_atomic(output, data_or_text)
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(data_or_text, nl=False)


class TensorForgeGroup(click.Group):
    """Turns a user-caused TensorForgeError into one line on stderr and exit status 2, for
    every command (plugins' too), also under click's CliRunner."""

    refresh_plugins: Optional[Callable[[], None]] = None

    def resolve_command(self, ctx, args):
        # Runs after the root options were parsed and before the subcommand is looked up.
        if self.refresh_plugins is not None:
            self.refresh_plugins()
        return super().resolve_command(ctx, args)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except TensorForgeError as exc:
            click.echo(f"error: {shorten(str(exc))}", err=True)
            ctx.exit(2)


def make_cli(host_factory: Callable[[], PluginHost] = PluginHost) -> click.Group:
    state = _Context(host_factory)

    @click.group(cls=TensorForgeGroup, context_settings={"help_option_names": ["-h", "--help"]})
    @click.version_option(__version__, prog_name="tensorforge")
    @click.option("--plugins", "only", metavar="NAMES", expose_value=False, callback=_set_env("only"),
                  help=f"Load only these plugins (entry-point names, comma-separated); sets {ONLY}.")
    @click.option("--disable-plugins", "disable", metavar="NAMES", expose_value=False,
                  callback=_set_env("disable"),
                  help=f"Never load these plugins (comma-separated); sets {DISABLE}.")
    @click.option("--trace-hooks", "trace", is_flag=True, expose_value=False, callback=_set_env("trace"),
                  help=f"Print each plugin load and hook call with its duration on stderr; sets {TRACE}=1.")
    @click.pass_context
    def cli(ctx):
        """TensorForge: how fast can this run, how fast does it run, and can I trust either?

        Predicts an analytical lower bound (PREDICTED) for ML workloads on hardware targets,
        and, with the Ops side, measures them on a real device (MEASURED), calibrates ceilings
        (CALIBRATED), records telemetry (DIAGNOSTIC) and decides only with evidence (POLICY).
        Workloads, targets and mappings come from plugins: see `tensorforge list-plugins`.
        """
        ctx.obj = state

    @cli.command("list-plugins")
    @click.option("--json", "as_json", is_flag=True, help="Print the same information as JSON.")
    def list_plugins(as_json):
        """List installed plugins: distribution, version, side (core/ops), hooks implemented,
        what each registered, and the error of any plugin that failed to load.

        Plugins slower to import than TENSORFORGE_SLOW_IMPORT_S seconds (default 1) are named
        in a warning; they still work.
        """
        reports = state.host.all_reports()
        for r in reports:
            for warning in r.warnings:
                click.echo(f"warning: plugin {r.name!r} is {warning}", err=True)
        for line in state.host.selection_problems():
            click.echo(f"warning: {line}", err=True)
        if as_json:
            click.echo(canonical_json(to_data(reports)), nl=False)
            return
        rows = []
        for r in reports:
            registered = "; ".join(f"{k}: {', '.join(v)}" for k, v in sorted(r.registered.items()) if v)
            cell = f"ERROR: {r.error}" if r.error else (registered or "-")
            cell += "".join(f"; WARNING: {w}" for w in r.warnings)
            dist = f"{r.distribution} {r.version}" if r.distribution else "-"
            rows.append([r.name, r.side, dist, ", ".join(h.replace("tensorforge_", "") for h in r.hooks) or "-",
                         cell])
        click.echo(table(["plugin", "side", "distribution", "hooks", "registered"], rows))

    @cli.command()
    @click.option("--target", "-t", "target_name", required=True,
                  help="Target name (see `targets list`) or a target file (./my-npu.toml; "
                       "see `targets show`).")
    @click.option("--workload", "-w", "specs", multiple=True,
                  help="Preset name, preset with overrides (gemm_tiny:dtype=fp16) or inline spec "
                       "(gemm:m=8192,n=8192,k=8192,dtype=bf16). Repeatable. Default: every "
                       "plugin's default suite.")
    @click.option("--suite", "suites", multiple=True, type=click.Path(dir_okay=False),
                  help="A TOML or JSON suite file of [[workload]] tables. Repeatable.")
    @click.option("--operating-point", "-p", default=None, help="Target operating point (default: the target's).")
    @click.option("--ceilings", "ceilings_path", type=click.Path(dir_okay=False), default=None,
                  help="Calibrated ceilings: a calibration document (`tensorforge calibrate --json "
                       "> cal.json`) or a capture (its CALIBRATED section); gives a 'calibrated' "
                       "lower bound. Refused unless measured on a device the target describes.")
    @click.option("--force-ceilings", is_flag=True,
                  help="Use --ceilings even if they were measured on another device (or name none); "
                       "the prediction then says whose ceilings it used.")
    @click.option("--max-candidates", type=click.IntRange(1, 1_000_000), default=None,
                  help="Evaluate at most N mapping candidates per operator and strategy (default "
                       "16384: every shipped mapping space, an exhaustive search). A lower N that cuts "
                       "a space gives a labelled relaxation: a looser bound, never a higher one.")
    @click.option("--detail", is_flag=True, help="Show every operator of every workload.")
    @click.option("--json", "as_json", is_flag=True, help="Write the deterministic JSON result.")
    @click.option("--output", "-o", type=click.Path(dir_okay=False), default=None,
                  help="Write to this file (atomically) instead of standard output.")
    def predict(target_name, specs, suites, operating_point, ceilings_path, force_ceilings, max_candidates,
                detail, as_json, output):
        """Predict the lower-bound latency of workloads on a target (PREDICTED).

        Per workload: FLOPs, compulsory bytes, chosen mapping (tile, waves), compute time,
        memory time, the lower bound, the bottleneck term, and which ceilings were used.
        """
        from .api import run_prediction
        from .render import prediction_text
        host = state.host
        warn_broken(host)
        ceilings = None
        if ceilings_path:
            from .ceilings_file import load_ceilings
            ceilings = load_ceilings(ceilings_path, host.target(target_name), force_ceilings)
        elif force_ceilings:
            raise TensorForgeError("--force-ceilings applies to --ceilings, which was not given")
        pred = run_prediction(host, target_name, specs, suites, operating_point, ceilings, max_candidates)
        text = canonical_json(to_data(pred)) if as_json else prediction_text(pred, detail) + "\n"
        emit(text, output)

    @cli.group(cls=TensorForgeGroup)
    def targets():
        """Inspect installed hardware targets."""

    @targets.command("list")
    def targets_list():
        """List targets with their PE array, memory and operating points."""
        host = state.host
        from .target import datasheet_ceilings
        from .units import binary_bytes, si
        rows = []
        for name in host.names("targets"):
            t = host.target(name)
            c = datasheet_ceilings(t)
            best = max(c.compute.items(), key=lambda kv: kv[1])
            rows.append([name, f"{t.pe_array.units} {t.pe_array.unit_name}", binary_bytes(t.dram_capacity_bytes),
                         si(c.dram_bytes_per_s, "B/s"), f"{best[0]} {si(best[1], 'FLOP/s')}",
                         ", ".join(p.name + ("*" if p.name == t.default_operating_point else "")
                                   for p in t.operating_points)])
        click.echo(table(["target", "PE array", "DRAM", "DRAM bw", "peak", "operating points (*default)"], rows))

    @targets.command("show")
    @click.argument("name")
    @click.option("--format", "fmt", type=click.Choice(["toml", "json"]), default="toml", show_default=True,
                  help="toml: the target file format that `--target FILE` reads back; json: the "
                       "same fields as data.")
    def targets_show(name, fmt):
        """Print a target's full description with the source of every figure.

        NAME is an installed target or a target file. The TOML output is a target file: save it,
        edit it, and pass it to `predict --target ./FILE.toml`.
        """
        host = state.host
        target = host.target(name)
        if fmt == "json":
            click.echo(canonical_json(to_data(target)), nl=False)
            return
        from .target_dump import dump_target
        owner = host.owner("targets", name)
        report = host.reports.get(owner) if owner else None
        origin = (f"registered by plugin {owner!r}" + (f" ({report.distribution} {report.version})"
                                                        if report and report.distribution else "")
                  if owner else f"read from {name}")
        click.echo(dump_target(target, origin), nl=False)

    @cli.command()
    def workloads():
        """List workload kinds, their parameters and presets (* = in the default suite)."""
        import attrs as _attrs
        host = state.host
        for name in host.names("workloads"):
            kind = host.workload_kind(name)
            params = ", ".join(f.name for f in _attrs.fields(kind.params_type))
            click.echo(f"{name}: {kind.description}\n  parameters: {params}")
            for preset in sorted(kind.presets):
                mark = "*" if preset in kind.default_suite else " "
                click.echo(f"  {mark} {preset}: {kind.spec(kind.parse(kind.presets[preset]))}")

    state.builtin_commands = tuple(cli.commands)
    cli.refresh_plugins = lambda: state.refresh(cli)
    state.host.call_add_commands(cli)
    return cli


def _set_env(which: str):
    """A root option's callback: record the choice where every plugin host will read it."""
    def callback(ctx, param, value):
        if value not in (None, False):
            set_env(os.environ, **{which: value})
    return callback


_ROOT_OPTIONS = {"--plugins": "only", "--disable-plugins": "disable"}


def _apply_root_options(argv) -> None:
    """Set the plugin options' environment before make_cli() loads plugins, so a plugin the
    user disabled is never imported (click parses them only after the CLI is built)."""
    args = iter(argv)
    for arg in args:
        if arg == "--trace-hooks":
            set_env(os.environ, trace=True)
            continue
        name, eq, value = arg.partition("=")
        if name in _ROOT_OPTIONS:
            value = value if eq else next(args, None)
            if value is not None:
                set_env(os.environ, **{_ROOT_OPTIONS[name]: value})
            continue
        if not arg.startswith("-") or arg == "--":
            return                    # the subcommand: options after it are its own


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else list(argv)
    saved = {name: os.environ.get(name) for name in (ONLY, DISABLE, TRACE)}
    try:
        _run(argv)
    finally:  # the options hold for this command only, also when main() is called in-process
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _run(argv) -> None:
    try:
        _apply_root_options(argv)
        cli = make_cli()
        # Outside standalone mode click returns the exit code of ctx.exit() instead of exiting.
        code = cli.main(args=argv, prog_name="tensorforge", standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except TensorForgeError as exc:
        click.echo(f"error: {shorten(str(exc))}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        # One line naming the culprit; `--help` is one flag away.
        click.echo(f"error: {shorten(exc.format_message())}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(130)
