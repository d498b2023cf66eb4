"""Entry point (group 'tensorforge_measure'): registers the 'mlflow' capture sink. Importing this
module does not import mlflow; the sink does, when it exports."""

from tensorforge_measure import hookimpl
from tf_mlflow.sink import MlflowSink


@hookimpl
def tensorforge_measure_register_sinks(register):
    register(MlflowSink())
