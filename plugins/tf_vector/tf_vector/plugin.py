"""TensorForge's vector workloads: the memory-bound operators real models run between their
matrix multiplications, each a workload kind of its own (softmax.py, norm.py, activation.py,
elementwise.py), so they can be predicted, probed and measured alone."""

from tensorforge import hookimpl
from tf_vector.activation import Activation
from tf_vector.elementwise import Elementwise
from tf_vector.norm import Norm
from tf_vector.softmax import Softmax


@hookimpl
def tensorforge_register_workloads(register):
    for kind in (Softmax(), Norm(), Activation(), Elementwise()):
        register(kind)
