"""Exact PLUGIN on Dask workers (DaskBackend) against the cpu backend in one process, in one run.

Usage: python benchmarks/distributed_plugin.py [--sizes 20000,50000] [--repeat 3] [--no-process] [--output-dir DIR]

Data: a bimodal sample (half N(-2, 0.5^2), half N(2, 0.5^2)), seed 0.  Configurations: the cpu
backend in this process (Numba on every core); ``DaskBackend(local="cpu")`` on a
``LocalCluster(processes=True)`` of 1 worker x 1 thread and of 2 workers x 1 thread (each task one
Numba thread).  Times are the best of ``--repeat`` calls after a warm-up on 4096 values (Numba's
cached code and the workers' imports loaded), in seconds; ``rel. h`` is |h - h_ref| / h_ref, h_ref
the cpu backend's (or, with ``--no-process``, which skips it at sizes where it takes long, the one
worker's).  Writes distributed_plugin.{json,md} into benchmarks/results/, keeping the rows of sizes
not run this time.
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


def best_time(call, x: np.ndarray, repeat: int) -> tuple[float, float]:
    call(x[:4096])  # warm-up: Numba's cached code and the imports loaded on every worker
    best, result = float("inf"), float("nan")
    for _ in range(repeat):
        start = time.perf_counter()
        result = call(x)
        best = min(best, time.perf_counter() - start)
    return best, result


def bimodal(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    x = np.empty(n)
    x[: n // 2] = rng.normal(-2.0, 0.5, n // 2)
    x[n // 2 :] = rng.normal(2.0, 0.5, n - n // 2)
    return x


def _previous_reference(folder: Path, n: int, h: float) -> float:
    """The reference h of size ``n`` in the results already written (the cpu backend's, else the first
    configuration's), or ``h`` when there is none."""
    path = folder / "distributed_plugin.json"
    rows = [r for r in json.loads(path.read_text())["rows"] if r["n"] == n] if path.exists() else []
    return float(rows[0]["h"]) if rows else h


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20000,50000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-process", action="store_true", help="skip the cpu backend in this process")
    parser.add_argument("--workers", default="1,2", help="LocalCluster sizes to run (workers x 1 thread)")
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = []
    reference: dict[int, float] = {}
    for n in [] if args.no_process else sizes:
        seconds, h_cpu = best_time(lambda x: plugin(x, backend="cpu", method="exact"), bimodal(n), args.repeat)
        reference[n] = h_cpu
        rows.append({"n": n, "config": "cpu backend, this process", "seconds": seconds, "h": h_cpu, "rel_h": 0.0})
        print(json.dumps(rows[-1]), flush=True)
    for workers in (int(w) for w in args.workers.split(",")):
        with (
            LocalCluster(processes=True, n_workers=workers, threads_per_worker=1, dashboard_address=":0") as cluster,
            Client(cluster) as client,
        ):
            backend = DaskBackend(client, "cpu")
            for n in sizes:
                seconds, h = best_time(lambda x, be=backend: plugin(x, backend=be, method="exact"), bimodal(n),
                                       args.repeat)
                h_ref = reference.setdefault(n, _previous_reference(args.output_dir, n, h))
                rows.append({
                    "n": n, "config": f"DaskBackend, {workers} worker(s) x 1 thread", "seconds": seconds, "h": h,
                    "rel_h": abs(h - h_ref) / h_ref,
                })
                print(json.dumps(rows[-1]), flush=True)
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    meta = {"machine": machine(), "repeat": args.repeat, "note": f"load average at the end {load}: timings on a shared machine are noisy"}
    args.output_dir.mkdir(parents=True, exist_ok=True)
    previous = args.output_dir / "distributed_plugin.json"
    if previous.exists():  # keep the rows of the (size, configuration) pairs not run this time
        ran = {(r["n"], r["config"]) for r in rows}
        rows = [r for r in json.loads(previous.read_text())["rows"] if (r["n"], r["config"]) not in ran] + rows
        rows.sort(key=lambda r: (r["n"], r["config"]))
    (args.output_dir / "distributed_plugin.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    lines = [f"Exact PLUGIN, {meta['machine']} (best of {args.repeat}; {meta['note']})", "",
             "| n | configuration | seconds | rel. h vs reference |", "|---:|---|---:|---:|"]
    lines += [f"| {r['n']} | {r['config']} | {r['seconds']:.3f} | {r['rel_h']:.1e} |" for r in rows]
    table = "\n".join(lines) + "\n"
    (args.output_dir / "distributed_plugin.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
