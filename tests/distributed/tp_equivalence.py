"""Run under torchrun (two processes, gloo): the tp=2 transformer builder computes what the
tp=1 builder computes with the same seed, for prefill, decode with a KV cache, an LM head and
KV heads replicated across ranks. Rank 0 writes {spec: max relative error} as JSON to argv[1]."""

import json
import sys

import torch
import torch.distributed as dist
from tf_transformer.torch_builder import TransformerTorch

from tensorforge.host.plugin_host import PluginHost
from tensorforge.workloads.suite import resolve

CASES = [
    "transformer:hidden=64,layers=2,heads=4,kv_heads=2,intermediate=128,seq=8,dtype=fp32",
    "transformer:hidden=64,layers=2,heads=4,kv_heads=1,intermediate=96,batch=2,seq=1,phase=decode,context=9,dtype=fp32",
    "transformer:hidden=64,layers=1,heads=4,kv_heads=4,intermediate=128,vocab=50,seq=5,mlp=gelu,norm=layernorm,dtype=fp32",
]


def main(out_path: str) -> None:
    dist.init_process_group("gloo")
    host = PluginHost()
    builder = TransformerTorch()
    errors = {}
    with torch.inference_mode():
        for spec in CASES:
            ((single, _),) = resolve(host, (spec,))
            ((split, _),) = resolve(host, (spec + ",tp=2",))
            reference = builder.build(single.params, torch.device("cpu"))()
            sharded_fn = builder.build(split.params, torch.device("cpu"))
            sharded = sharded_fn()
            ok, detail = sharded_fn.check()
            rel = float((sharded - reference).norm() / reference.norm())
            errors[spec] = {"rel_error": rel, "check": [ok, detail], "shape_equal": sharded.shape == reference.shape}
    if dist.get_rank() == 0:
        with open(out_path, "w", encoding="utf-8") as handle:
            json.dump(errors, handle)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
