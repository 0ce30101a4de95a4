#!/usr/bin/env python3
"""Turns posenc_bench's Google Benchmark JSON into markdown tables.

usage: report.py build/bench.json > build/bench.md

One table per family, one row per shape x threads x implementation: time per call, GB/s (bytes
read + written), % of the scale roof at the same bytes and threads, both roofs there, and speedup
over the fp64 reference (which runs only the smaller cases, at 1 thread). Attention adds GFLOP/s and % of Eigen's
GEMM on the same products. A roof table opens the report.
"""

import json
import sys
from collections import OrderedDict

UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def seconds(run):
    return run["real_time"] * UNITS[run["time_unit"]]


def fmt_time(s):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def fmt(value, digits=3):
    return "—" if value is None else f"{value:.{digits}g}"


def parse(name):
    """'rope/hwy:AVX2/t=1,h=8,d=64,angles/threads:2/real_time' -> parts."""
    parts = [p for p in name.split("/") if p != "real_time"]
    family, impl, shape, threads = parts[0], parts[1], parts[2], parts[3]
    return family, impl, shape, int(threads.split(":")[1])


def runs(benchmarks):
    """One result per benchmark: the median aggregate under --benchmark_repetitions, else the run."""
    chosen = OrderedDict()
    for b in benchmarks:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b["run_name"]
        if name not in chosen or b.get("run_type") == "aggregate":
            chosen[name] = b
    return chosen.values()


def roof_table(rows):
    sizes = OrderedDict()
    for shape, threads, kind, gbps in rows:
        sizes.setdefault((shape, threads), {})[kind] = gbps
    out = ["| bytes moved | threads | scale GB/s | copy GB/s |", "|---|---|---|---|"]
    for (shape, threads), kinds in sizes.items():
        out.append(f"| {shape.split('=')[1]} | {threads} | {fmt(kinds.get('scale'))} "
                   f"| {fmt(kinds.get('copy'))} |")
    return out


def family_table(family, rows):
    attention = family == "attention"
    reference = {}
    for r in rows:
        if r["impl"] == "reference" and r["error"] is None:
            reference[r["shape"]] = r["seconds"]
    head = ("| shape | threads | implementation | time | GB/s | % roof "
            "| roof GB/s scale / copy | × reference |")
    rule = "|---|---|---|---|---|---|---|---|"
    if attention:
        head += " GFLOP/s | % Eigen GEMM |"
        rule += "---|---|"
    out = [head, rule]
    for r in rows:
        cells = [r["shape"], str(r["threads"]), r["impl"]]
        if r["error"] is not None:
            cells += [r["error"], "", "", "", ""] + (["", ""] if attention else [])
        else:
            b = r["bench"]
            ref = reference.get(r["shape"])
            gbps = b.get("bytes_per_second")
            cells += [
                fmt_time(r["seconds"]),
                fmt(gbps / 1e9 if gbps else None),
                fmt(b.get("roof_pct")),
                f"{fmt(b.get('roof_GBps'))} / {fmt(b.get('copy_GBps'))}" if "roof_GBps" in b else "—",
                fmt(ref / r["seconds"] if ref else None),
            ]
            if attention:
                flops = b.get("flops_per_second")
                cells += [fmt(flops / 1e9 if flops else None), fmt(b.get("gemm_pct"))]
        out.append("| " + " | ".join(cells) + " |")
    return out


def main(path):
    with open(path) as f:
        data = json.load(f)
    ctx = data["context"]
    lines = [
        f"CPU: {ctx.get('cpu', '?')}, {ctx['num_cpus']} cores, "
        f"L2 {ctx['caches'][2]['size'] >> 10} KiB, L3 {ctx['caches'][3]['size'] >> 20} MiB"
        if len(ctx.get("caches", [])) >= 4 else f"CPU: {ctx.get('cpu', '?')}",
        f"Run {ctx['date']}, load average {', '.join(f'{x:.2f}' for x in ctx['load_avg'])}"
        + (" (smoke mode: tiny shapes)" if ctx.get("posenc_smoke") == "true" else ""),
        "",
    ]
    roof, families = [], OrderedDict()
    for b in runs(data["benchmarks"]):
        family, impl, shape, threads = parse(b["run_name"])
        error = ("skipped: " + b["error_message"].removeprefix("skipped: ")
                 if b.get("error_occurred") else None)
        if family == "roof":
            if error is None:
                roof.append((shape, threads, impl, b["bytes_per_second"] / 1e9))
            continue
        families.setdefault(family, []).append(dict(
            impl=impl, shape=shape, threads=threads, error=error, bench=b,
            seconds=seconds(b)))
    if roof:
        lines += ["### Roof", ""] + roof_table(roof) + [""]
    for family, rows in families.items():
        lines += [f"### {family}", ""] + family_table(family, rows) + [""]
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
