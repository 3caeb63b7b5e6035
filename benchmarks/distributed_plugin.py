"""Exact PLUGIN on Dask workers (DaskBackend) against the cpu backend in one process, in one run.

Usage: python benchmarks/distributed_plugin.py [--sizes 20000,50000] [--repeat 3] [--output-dir DIR]

Data: a bimodal sample (half N(-2, 0.5^2), half N(2, 0.5^2)), seed 0.  Configurations: the cpu
backend in this process (Numba on every core); ``DaskBackend(local="cpu")`` on a
``LocalCluster(processes=True)`` of 1 worker x 1 thread and of 2 workers x 1 thread (each task one
Numba thread).  Times are the best of ``--repeat`` calls after one warm-up, in seconds; ``rel. h``
is |h - h_cpu| / h_cpu.  Writes distributed_plugin.{json,md} into benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from _common import machine  # benchmarks/_common.py (the scripts run from benchmarks/)
from distributed import Client, LocalCluster

from parzen.bandwidth import plugin
from parzen.distributed import DaskBackend

RESULTS = Path(__file__).parent / "results"


def best_time(call, repeat: int) -> tuple[float, float]:
    result = call()  # warm-up: Numba's cached code loaded on every worker
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best, result


def bimodal(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    x = np.empty(n)
    x[: n // 2] = rng.normal(-2.0, 0.5, n // 2)
    x[n // 2 :] = rng.normal(2.0, 0.5, n - n // 2)
    return x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000,50000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    for n in sizes:
        x = bimodal(n)
        seconds, h_cpu = best_time(lambda x=x: plugin(x, backend="cpu", method="exact"), args.repeat)
        rows.append({"n": n, "config": "cpu backend, this process", "seconds": seconds, "h": h_cpu, "rel_h": 0.0})
        print(json.dumps(rows[-1]), flush=True)
    for workers in (1, 2):
        with (
            LocalCluster(processes=True, n_workers=workers, threads_per_worker=1, dashboard_address=":0") as cluster,
            Client(cluster) as client,
        ):
            backend = DaskBackend(client, "cpu")
            for n in sizes:
                x = bimodal(n)
                seconds, h = best_time(lambda x=x, be=backend: plugin(x, backend=be, method="exact"), args.repeat)
                h_cpu = next(r["h"] for r in rows if r["n"] == n and r["config"].startswith("cpu"))
                rows.append({
                    "n": n, "config": f"DaskBackend, {workers} worker(s) x 1 thread", "seconds": seconds, "h": h,
                    "rel_h": abs(h - h_cpu) / h_cpu,
                })
                print(json.dumps(rows[-1]), flush=True)
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    meta = {"machine": machine(), "repeat": args.repeat, "note": f"load average at the end {load}: timings on a shared machine are noisy"}
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "distributed_plugin.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    lines = [f"Exact PLUGIN, {meta['machine']} (best of {args.repeat}; {meta['note']})", "",
             "| n | configuration | seconds | rel. h vs cpu |", "|---:|---|---:|---:|"]
    lines += [f"| {r['n']} | {r['config']} | {r['seconds']:.3f} | {r['rel_h']:.1e} |" for r in rows]
    table = "\n".join(lines) + "\n"
    (args.output_dir / "distributed_plugin.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
