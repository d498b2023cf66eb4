"""A whole GPT-2 forward as Hugging Face's eager code runs it, measured on a GPU, against the
estimate of the same model: once with the coefficients of the device's own family and once with
another family's (leave the family out: the estimate as it stands for a GPU it was not fitted on).

    python benchmarks/whole_model.py [--out benchmarks/results/whole_model.json]   (needs a GPU)
    python benchmarks/whole_model.py --rescore benchmarks/results/whole_model.json   (CPU: the
        same measurements against the current estimate)

The model is written here in plain PyTorch, op for op as transformers' modeling_gpt2 (eager
attention, use_cache off) runs GPT2LMHeadModel.forward: token and position embeddings and their
add; per block ln_1, c_attn (addmm), q/k/v split into heads (views), scores = q @ k^T through
torch.matmul, the division by sqrt(head_dim) and the causal torch.where against the dtype's
minimum (each with its scalar torch.full), softmax, context = p @ v, heads merged (contiguous),
c_proj, residual add, ln_2, c_fc, gelu_new as its eight elementwise ops, c_proj, residual add;
ln_f and the LM head over every position. None of the project's builders is used.

Timed as published model measurements are: one eager forward between CUDA events, no flush,
the mean of the fastest 5 of 25 (eager-warm), fp32 with TF32 off (torch's default) and fp16.
The cases (batch x sequence) are fixed here, chosen before any estimate was compared with them.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

import _result

NAME = "whole_model"
CONFIG = Path(__file__).resolve().parent.parent / "examples" / "configs" / "gpt2" / "config.json"
CASES = ((1, 128), (1, 1024), (4, 512), (8, 1024), (16, 256), (32, 128))
DTYPES = ("fp32", "fp16")
OTHER_FAMILY = "nvidia-sm80"  # the leave-the-family-out coefficients on the H200
COLUMNS = [
    ("model", "model"),
    ("dtype", "dtype"),
    ("batch", "batch"),
    ("seq", "seq"),
    ("measured_s", "eager-warm (s)"),
    ("estimate_own_s", "estimate, own family (s)"),
    ("ape_own", "APE own"),
    ("estimate_other_s", f"estimate, {OTHER_FAMILY} (s)"),
    ("ape_other", "APE other"),
    ("bound_s", "bound (s)"),
]
LABELS = {
    "measured_s": "MEASURED: one eager GPT-2 forward (Hugging Face's op sequence) between CUDA events, "
    "no flush, the mean of the fastest 5 of 25",
    "estimate_own_s": "PREDICTED: the estimate (eager-warm protocol) with the coefficients of the device's family",
    "estimate_other_s": f"PREDICTED: the same with {OTHER_FAMILY}'s coefficients (fitted to public A100 data)",
    "bound_s": "PREDICTED: the lower bound",
    "ape_own": "DERIVED: |estimate_own - measured| / measured",
    "ape_other": "DERIVED: |estimate_other - measured| / measured",
    "median_ape_own": "DERIVED: median of ape_own",
    "median_ape_other": "DERIVED: median of ape_other",
    "below_bound": "DERIVED: rows measured below the bound",
}


def spec(dtype: str, batch: int, seq: int) -> str:
    return f"transformer:config={CONFIG},batch={batch},seq={seq},dtype={dtype},attention=eager,impl=huggingface"


def build_gpt2(torch, cfg: dict, dtype):
    """GPT2LMHeadModel's eager forward, op for op (module docstring); random weights."""
    D, H, L, V = cfg["n_embd"], cfg["n_head"], cfg["n_layer"], cfg["vocab_size"]
    P, hd, eps = cfg["n_positions"], cfg["n_embd"] // cfg["n_head"], cfg["layer_norm_epsilon"]
    F = torch.nn.functional
    dev = "cuda"

    def w(*shape):
        return (torch.randn(*shape, device=dev) * 0.02).to(dtype)

    wte, wpe = w(V, D), w(P, D)
    blocks = [
        {
            "ln1": (torch.ones(D, device=dev, dtype=dtype), torch.zeros(D, device=dev, dtype=dtype)),
            "attn_w": w(D, 3 * D),
            "attn_b": w(3 * D),
            "proj_w": w(D, D),
            "proj_b": w(D),
            "ln2": (torch.ones(D, device=dev, dtype=dtype), torch.zeros(D, device=dev, dtype=dtype)),
            "fc_w": w(D, 4 * D),
            "fc_b": w(4 * D),
            "fc2_w": w(4 * D, D),
            "fc2_b": w(D),
        }
        for _ in range(L)
    ]
    lnf = (torch.ones(D, device=dev, dtype=dtype), torch.zeros(D, device=dev, dtype=dtype))
    bias = torch.tril(torch.ones((P, P), dtype=torch.bool, device=dev)).view(1, 1, P, P)

    def conv1d(x, weight, b):  # transformers.pytorch_utils.Conv1D
        size_out = x.size()[:-1] + (weight.size(-1),)
        return torch.addmm(b, x.view(-1, x.size(-1)), weight).view(size_out)

    def split_heads(t):
        return t.view(t.size()[:-1] + (H, hd)).permute(0, 2, 1, 3)

    def gelu_new(x):  # transformers.activations.NewGELUActivation
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))

    def forward(input_ids):
        S = input_ids.size(-1)
        position_ids = torch.arange(0, S, dtype=torch.long, device=dev).unsqueeze(0)
        h = F.embedding(input_ids, wte) + F.embedding(position_ids, wpe)
        for b in blocks:
            residual = h
            x = F.layer_norm(h, (D,), *b["ln1"], eps)
            q, k, v = conv1d(x, b["attn_w"], b["attn_b"]).split(D, dim=2)
            q, k, v = split_heads(q), split_heads(k), split_heads(v)
            s = torch.matmul(q, k.transpose(-1, -2))
            s = s / torch.full([], v.size(-1) ** 0.5, dtype=s.dtype, device=dev)
            causal = bias[:, :, 0:S, 0:S]
            mask_value = torch.full([], torch.finfo(s.dtype).min, dtype=s.dtype, device=dev)
            s = torch.where(causal, s.to(s.dtype), mask_value)
            p = F.softmax(s, dim=-1).type(v.dtype)
            o = torch.matmul(p, v).permute(0, 2, 1, 3).contiguous()
            o = o.view(o.size()[:-2] + (D,))
            h = conv1d(o, b["proj_w"], b["proj_b"]) + residual
            residual = h
            x = F.layer_norm(h, (D,), *b["ln2"], eps)
            x = conv1d(gelu_new(conv1d(x, b["fc_w"], b["fc_b"])), b["fc2_w"], b["fc2_b"])
            h = residual + x
        h = F.layer_norm(h, (D,), *lnf, eps)
        return F.linear(h, wte)

    return forward


def eager_warm(torch, fn, arg) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with torch.inference_mode():
        for _ in range(3):
            fn(arg)
        torch.cuda.synchronize()
        times = []
        for _ in range(25):
            start.record()
            fn(arg)
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) * 1e-3)
    times.sort()
    return sum(times[:5]) / 5


def profile(torch, dtype: str, batch: int, seq: int) -> list[tuple[str, int, float]]:
    """Device time by kernel name over one eager forward (torch.profiler): (name, count, seconds)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    cfg = json.loads(CONFIG.read_text(encoding="utf-8"))
    fn = build_gpt2(torch, cfg, {"fp32": torch.float32, "fp16": torch.float16}[dtype])
    ids = torch.randint(0, cfg["vocab_size"], (batch, seq), device="cuda")
    with torch.inference_mode():
        for _ in range(3):
            fn(ids)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            fn(ids)
            torch.cuda.synchronize()
    totals: dict[str, list] = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            t = totals.setdefault(e.name[:90], [0, 0.0])
            t[0] += 1
            t[1] += e.device_time_total * 1e-6 if hasattr(e, "device_time_total") else e.cuda_time_total * 1e-6
    return sorted(((k, n, s) for k, (n, s) in totals.items()), key=lambda r: -r[2])


def measure(torch) -> list[dict]:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cfg = json.loads(CONFIG.read_text(encoding="utf-8"))
    rows = []
    for dtype in DTYPES:
        fn = build_gpt2(torch, cfg, {"fp32": torch.float32, "fp16": torch.float16}[dtype])
        for batch, seq in CASES:
            ids = torch.randint(0, cfg["vocab_size"], (batch, seq), device="cuda")
            rows.append(
                {"model": "gpt2", "dtype": dtype, "batch": batch, "seq": seq, "measured_s": eager_warm(torch, fn, ids)}
            )
            print(f"gpt2 {dtype} b={batch} s={seq}: {rows[-1]['measured_s'] * 1e3:.3f} ms", file=sys.stderr)
        del fn
        torch.cuda.empty_cache()
    return rows


def predict_rows(rows: list[dict], target_name: str = "h200") -> list[dict]:
    """Each row with the bound and the eager-warm estimate, own family and OTHER_FAMILY."""
    from tensorforge.api import predict, resolve_spec
    from tensorforge.estimate.shipped import shipped
    from tensorforge.host.plugin_host import PluginHost

    host = PluginHost()
    target = host.target(target_name)
    other = shipped()[OTHER_FAMILY]
    out = []
    for r in rows:
        chosen = [resolve_spec(host, spec(r["dtype"], r["batch"], r["seq"]))]
        own = predict(chosen, target, host.mappings(), estimate=True).workloads[0]
        alt = predict(chosen, target, host.mappings(), estimate=other).workloads[0]
        e_own, e_alt = own.estimate.for_protocol("eager-warm"), alt.estimate.for_protocol("eager-warm")
        m = r["measured_s"]
        out.append(
            {
                **{k: r[k] for k in ("model", "dtype", "batch", "seq", "measured_s")},
                "estimate_own_s": e_own,
                "ape_own": abs(e_own - m) / m,
                "estimate_other_s": e_alt,
                "ape_other": abs(e_alt - m) / m,
                "bound_s": own.latency_s,
            }
        )
    return out


def document(rows: list[dict], device: str, command: str | None = None) -> dict:
    return _result.build(
        benchmark=NAME,
        device=device,
        columns=COLUMNS,
        rows=rows,
        summary={
            "median_ape_own": statistics.median(r["ape_own"] for r in rows),
            "median_ape_other": statistics.median(r["ape_other"] for r in rows),
            "below_bound": sum(1 for r in rows if r["measured_s"] < r["bound_s"]),
        },
        labels=LABELS,
        notes=[
            f"own family: the H200's calibration (nvidia-sm90); other: {OTHER_FAMILY}, fitted to NeuSight's "
            "A100-PCIe-40GB training rows and LLMCompass's A100 sweep (public_fit.py), none of them an H200",
            "the model: Hugging Face GPT2LMHeadModel's eager forward written op for op in plain PyTorch "
            "(benchmarks/whole_model.py), random weights, use_cache off",
        ],
        fit="the H200's calibration probes (own) or public A100 rows (other); no whole model",
        evaluated=f"GPT-2 (examples/configs/gpt2) at {len(CASES)} batch x sequence cases in fp32 and fp16",
        command=command,
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    _result.out_option(ap, NAME)
    ap.add_argument("--profile", metavar="DTYPE,BATCH,SEQ", help="print device time by kernel of one forward; no file")
    _result.rescore_option(ap)
    a = ap.parse_args(argv)
    if a.profile:
        dtype, batch, seq = a.profile.split(",")
        rows = profile(_result.need_gpus(1, "whole_model.py"), dtype, int(batch), int(seq))
        for name, count, seconds in rows:
            print(f"{seconds * 1e3:9.3f} ms {count:5d}  {name}")
        print(f"{sum(r[2] for r in rows) * 1e3:9.3f} ms device time in all")
        return 0
    doc = _result.measured_and_scored(a, "whole_model.py", measure, predict_rows, document)
    _result.write(a.out, doc)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
