"""The Core's own mapping strategies, registered through the 'tensorforge' entry-point group
exactly as a third-party mapping plugin would be."""

from tensorforge.bound.mappings.attention import FlashAttention
from tensorforge.bound.mappings.collective import CollectiveMapping
from tensorforge.bound.mappings.matmul import TiledMatmul, VectorMatmul
from tensorforge.bound.mappings.streaming import Streaming
from tensorforge.hookspecs import hookimpl


@hookimpl
def tensorforge_register_mappings(register):
    register(TiledMatmul())
    register(FlashAttention())
    register(Streaming())
    register(VectorMatmul())
    register(CollectiveMapping())
