"""Entry point (group 'tensorforge_ops'): registers the 'mlflow' capture sink. Importing this
module does not import mlflow; the sink does, when it exports."""

from tensorforge_ops.hookspecs import hookimpl

from .sink import MlflowSink


@hookimpl
def tensorforge_ops_register_sinks(register):
    register(MlflowSink())
