"""The Core's own mapping strategies, registered through the 'tensorforge' entry-point group
exactly as a third-party mapping plugin would be."""

from ..hookspecs import hookimpl
from .attention import FlashAttention
from .collective import CollectiveMapping
from .matmul import TiledMatmul, VectorMatmul
from .streaming import Streaming


@hookimpl
def tensorforge_register_mappings(register):
    register(TiledMatmul())
    register(FlashAttention())
    register(Streaming())
    register(VectorMatmul())
    register(CollectiveMapping())
