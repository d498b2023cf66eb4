"""Workload kinds (what plugins register) and workloads (what users ask to predict)."""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from tensorforge.workloads.params import build_params, params_spec
from tensorforge.workloads.problems import Operator


class WorkloadKind:
    """Base class for a workload plugin's kind, e.g. 'gemm'.

    Subclasses set `name`, `description`, `params_type` (an attrs class whose fields carry
    `min`/`choices` metadata), `presets` (preset name -> fields) and `default_suite` (the
    preset names `predict` runs when no workload is given), and implement `operators`. What
    only the kind knows, the Core and the measuring side ask it: `estimate_class(params)`,
    `tokens(params)`, `devices(params)`, `memory(params)` and, for a generative model,
    `serving(params, batch, context)` (`predict --model`), each with a neutral default.
    """

    name: str = ""
    description: str = ""
    params_type: type = object
    presets: Mapping[str, Mapping[str, Any]] = {}
    default_suite: tuple[str, ...] = ()
    # the parameter that names a model file (e.g. a Hugging Face config.json): `predict --model
    # PATH` builds this kind with it; "" where the kind reads none
    model_file_field: str = ""

    def parse(self, fields: Mapping[str, Any], base_dir: Path | None = None) -> Any:
        """Validated params from user fields; `base_dir` resolves relative file paths."""
        return build_params(self.name, self.params_type, fields)

    def operators(self, params: Any) -> tuple[Operator, ...]:
        raise NotImplementedError

    def footprint_bytes(self, params: Any) -> int:
        """Device memory the workload needs at once: by default every distinct tensor."""
        sizes = {}
        for op in self.operators(params):
            for tensor in op.problem.reads() + op.problem.writes():
                sizes[tensor.name] = tensor.nbytes
        return sum(sizes.values())

    def spec(self, params: Any) -> str:
        return params_spec(self.name, params)

    def estimate_class(self, params: Any) -> str:
        """The estimate class these params fall in, one of tensorforge.estimate.classes.CLASSES
        (what `evaluate` and the estimate's scoring group workloads by). Default: 'other'. A
        method of the kind, not a hook: only the kind knows its params' fields, and the Core
        asks it instead of recognising it by name."""
        return "other"

    def tokens(self, params: Any) -> int | None:
        """Tokens one execution processes (e.g. batch x sequence of a transformer step), so an
        energy window can say joules per token; None (the default) where the kind counts none."""
        return None

    def devices(self, params: Any) -> int:
        """Devices one execution runs on, each running the operators `operators(params)` returns
        (one rank's share): the execution's energy is that many times theirs. Default 1."""
        return 1

    def memory(self, params: Any) -> Mapping[str, int]:
        """Device memory one execution needs at once on each device, by part (e.g. weights,
        kv_cache, activations: `predict --model`'s memory budget). Default: the footprint as one
        part."""
        return {"footprint": int(self.footprint_bytes(params))}

    def serving(self, params: Any, batch: int, context: int) -> tuple[Any, Any] | None:
        """For a generative model: the params of one prefill step (the prompt, `context` tokens
        per sequence, ending in the first output token) and of one decode step (one new token per
        sequence with `context` tokens in its cache), at `batch` sequences (`predict --model`).
        None (the default) where the kind is no such model; ValueError for a batch or context
        it cannot take."""
        return None


@attrs.frozen
class Workload:
    """A named, fully specified workload: which kind, with which params."""

    name: str
    kind: str
    params: Any
    spec: str
