"""Import published operator measurements (NeuSight, LLMCompass) into the compact, attributed
row files the shipped estimate coefficients are fitted from and the portable evaluation scores
against (benchmarks/public/*.csv.gz; benchmarks/public/README.md says what each holds).

Why an importer and not copies: the sources are other projects' repositories; every row keeps
the file and commit it came from, its unit is converted once here (milliseconds -> seconds),
and the protocol it was timed with is named (it decides which estimate it is compared with:
`predict --protocol`). Which rows fit and which evaluate is decided here, before any fitting,
and never by looking at errors:

  NeuSight (sitar-lab/NeuSight, scripts/asplos/data/dataset/):
    fit   train/collect/<op>/p2.1.0/<GPU>.csv of its training GPUs of the families shipped
          (A100-PCIE-40GB sm80, V100-PCIE-32GB sm70, T4 sm75), a deterministic subsample
          (every n-th row by latency, so every size is represented; FIT_ROWS per GPU and op)
    eval  test/{bmm,linear,ln,softmax,elem}.csv: every row of the H100 and the L4 (GPUs NeuSight
          never trained on, and nothing here is fitted on them) and, as a second set, the test
          rows of the fitted GPUs (their shapes are out of the training distribution)
    protocol eager-warm: torch.cuda.Event pair around one eager call, no L2 flush (the same
          inputs every call), synchronize after each; the mean of the fastest 5 of 25 calls;
          fp32 with TF32 off (torch 2.1 defaults, cudnn.allow_tf32 = False)
  LLMCompass (PrincetonUniversity/LLMCompass, ae/figure5/ab/real_hardware/matmul_A100.csv):
    an A100 SXM4 80GB, bf16 M x K @ K x N (software_model/matmul.py run_on_gpu)
    fit   the M sweep at K = N = 12288 (11 rows)
    eval  the M = 8192 sweep over N = K (8 rows)
    protocol wall-warm: time.time() around one call + torch.cuda.synchronize(), no flush, median

    python benchmarks/public_import.py --neusight PATH --llmcompass PATH
PATH is a git directory (a clone or a bare mirror) of each repository; rows are read with
`git show <commit>:<path>`, so the commit recorded is the one read.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import re
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "public"
FIT_ROWS = {"bmm": 900, "linear": 900, "softmax": 150, "ln": 150, "add": 150, "gelu": 150}
FIT_GPUS = ("NVIDIA A100-PCIE-40GB", "Tesla V100-PCIE-32GB", "Tesla T4")
EVAL_GPUS = ("NVIDIA H100 80GB HBM3", "NVIDIA L4")
# NeuSight's vector ops and the workload spec each becomes (rows x cols fp32 tensors)
VECTOR_OPS = {
    "softmax": "softmax",
    "ln": "norm",
    "add": "elementwise",
    "mul": "elementwise",
    "div": "elementwise",
    "pow": "elementwise",
    "addu": "elementwise",
    "mulu": "elementwise",
    "divu": "elementwise",
    "powu": "elementwise",
    "relu": "activation",
    "gelu": "activation",
    "tanh": "activation",
}
FIELDS = ["source", "commit", "path", "role", "gpu", "op", "spec", "latency_s", "kernel", "protocol"]
PROTOCOLS = {"neusight": "eager-warm", "llmcompass": "wall-warm"}


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"public_import: git {' '.join(args[:2])} in {repo} failed: {out.stderr.strip()[:200]}")
    return out.stdout


def _kernel(name: str) -> str:
    """The kernel's own name without CUTLASS's template wrapping or its parameter list."""
    m = re.search(r"cutlass::Kernel<([^>]+)>", name)
    return (m.group(1) if m else name.split("(")[0].replace("void ", "")).strip()[:80]


def gemm_spec(op: str, b: int, m: int, n: int, k: int) -> str:
    """NeuSight's dims as a gemm workload: bmm(b x m x n, b x n x k) is a batch of m x k outputs
    over n; linear(b x m x n input, Linear(n, k)) is one (b*m) x k GEMM over n (plus its bias)."""
    if op == "bmm":
        return f"gemm:m={m},n={k},k={n},batch={b},dtype=fp32,math_mode=fp32"
    return f"gemm:m={b * m},n={k},k={n},dtype=fp32,math_mode=fp32"


def vector_spec(op: str, b: int, h: int) -> str:
    kind = VECTOR_OPS[op]
    if kind == "softmax":
        return f"softmax:rows={b},cols={h},dtype=fp32"
    if kind == "norm":
        return f"norm:rows={b},cols={h},norm=layer,dtype=fp32"
    if kind == "activation":
        return f"activation:rows={b},cols={h},fn={op},dtype=fp32"
    operand = "scalar" if op.endswith("u") else "tensor"
    return f"elementwise:rows={b},cols={h},op={op.rstrip('u')},operand={operand},dtype=fp32"


def _spec(row: dict[str, str]) -> str | None:
    op = row["OPName"]
    if op in ("bmm", "linear"):
        return gemm_spec(op, *(int(row[x]) for x in "BMNK"))
    if op in VECTOR_OPS and row.get("B") and row.get("H"):
        return vector_spec(op, int(row["B"]), int(row["H"]))
    return None


def subsample(rows: list[dict[str, str]], n: int) -> list[dict[str, str]]:
    """Every len/n-th row in order of latency: all sizes represented, deterministic."""
    if len(rows) <= n:
        return rows
    ordered = sorted(rows, key=lambda r: (float(r["Latency"]), r.get("Kernels", "")))
    step = len(ordered) / n
    return [ordered[int(i * step)] for i in range(n)]


def neusight_rows(repo: Path) -> list[dict[str, str]]:
    commit = _git(repo, "rev-parse", "HEAD").strip()
    base = "scripts/asplos/data/dataset"
    out: list[dict[str, str]] = []

    def add(path: str, role: str, rows, gpus) -> None:
        for r in rows:
            if r.get("Device") not in gpus:
                continue
            spec = _spec(r)
            if spec is None:
                continue
            out.append(
                {
                    "source": "sitar-lab/NeuSight",
                    "commit": commit,
                    "path": path,
                    "role": role,
                    "gpu": r["Device"],
                    "op": r["OPName"],
                    "spec": spec,
                    "latency_s": repr(float(r["Latency"]) * 1e-3),  # NeuSight records milliseconds
                    "kernel": _kernel(r.get("Kernel Name", "")),
                    "protocol": PROTOCOLS["neusight"],
                }
            )

    for op, n in FIT_ROWS.items():
        for gpu in FIT_GPUS:
            path = f"{base}/train/collect/{op}/p2.1.0/{gpu}.csv"
            rows = list(csv.DictReader(io.StringIO(_git(repo, "show", f"{commit}:{path}"))))
            add(path, "fit", subsample(rows, n), (gpu,))
    for name in ("bmm", "linear", "ln", "softmax", "elem"):
        path = f"{base}/test/{name}.csv"
        rows = list(csv.DictReader(io.StringIO(_git(repo, "show", f"{commit}:{path}"))))
        add(path, "eval", rows, EVAL_GPUS)
        add(path, "eval-fitted-gpu", rows, FIT_GPUS)
    return out


def llmcompass_rows(repo: Path) -> list[dict[str, str]]:
    commit = _git(repo, "rev-parse", "HEAD").strip()
    path = "ae/figure5/ab/real_hardware/matmul_A100.csv"
    out = []
    for line in _git(repo, "show", f"{commit}:{path}").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4 or not parts[3].endswith("ms"):
            continue
        m, n, k = (int(x) for x in parts[:3])  # the file's columns: M, N, K
        role = "fit" if (n == 12288 and k == 12288) else "eval"
        out.append(
            {
                "source": "PrincetonUniversity/LLMCompass",
                "commit": commit,
                "path": path,
                "role": role,
                "gpu": "NVIDIA A100-SXM4-80GB",
                "op": "matmul",
                "spec": f"gemm:m={m},n={n},k={k},dtype=bf16",
                "latency_s": repr(float(parts[3][:-2]) * 1e-3),
                "kernel": "",
                "protocol": PROTOCOLS["llmcompass"],
            }
        )
    return out


def write(rows: list[dict[str, str]], path: Path) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    tmp = path.with_suffix(".tmp")
    # mtime 0: the same rows give the same bytes (a re-import changes nothing unless the data did)
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(buf.getvalue().encode())
    tmp.replace(path)


def read(path: Path) -> list[dict[str, str]]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--neusight", type=Path, help="git directory of sitar-lab/NeuSight")
    ap.add_argument("--llmcompass", type=Path, help="git directory of PrincetonUniversity/LLMCompass")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    if not (a.neusight or a.llmcompass):
        ap.error("give --neusight and/or --llmcompass")
    a.out.mkdir(parents=True, exist_ok=True)
    for name, repo, fn in (("neusight", a.neusight, neusight_rows), ("llmcompass", a.llmcompass, llmcompass_rows)):
        if repo is None:
            continue
        rows = fn(repo)
        write(rows, a.out / f"{name}.csv.gz")
        roles: dict[str, int] = {}
        for r in rows:
            roles[r["role"]] = roles.get(r["role"], 0) + 1
        print(f"{name}: {len(rows)} rows ({', '.join(f'{k} {v}' for k, v in sorted(roles.items()))})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
