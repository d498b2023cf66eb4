"""Each workload's headline p50 and relative IQR per mode and regime in a capture: what the
decode-burst experiments read (issue 12: graph-mode rel. IQR <= 2%).

Usage: python benchmarks/headline_iqr.py CAPTURE.json [...] [--samples WORKLOAD]  (its headline
samples in timing order, us)
"""

from __future__ import annotations

import sys

from tensorforge.api import parse_json, read_text


def rows(path: str) -> list[str]:
    doc = parse_json(read_text(path, "capture"), f"capture {path}")
    out = [path]
    for name, w in doc["measured"]["workloads"].items():
        if not isinstance(w, dict) or "stats" not in w:
            continue
        s = w["stats"]
        line = f"  {name:22s} {w.get('mode', '?'):5s} {w.get('regime', '?'):9s} p50 {s['p50'] * 1e6:9.1f} us  rel IQR {s['rel_iqr'] * 100:5.2f}%  n {s['n']}"
        for m in w.get("modes") or []:
            ms = m["stats"]
            line += f" | {m['mode']}/{m['regime']} {ms['p50'] * 1e6:.1f} {ms['rel_iqr'] * 100:.2f}%"
        out.append(line)
    return out


def samples(path: str, name: str) -> str:
    doc = parse_json(read_text(path, "capture"), f"capture {path}")
    return " ".join(f"{x * 1e6:.0f}" for x in doc["measured"]["workloads"][name]["samples_s"])


if __name__ == "__main__":
    args = sys.argv[1:]
    show = None
    if "--samples" in args:
        i = args.index("--samples")
        show = args[i + 1]
        del args[i : i + 2]
    for p in args:
        print("\n".join(rows(p)))
        if show:
            print(f"  {show} samples (us): {samples(p, show)}")
