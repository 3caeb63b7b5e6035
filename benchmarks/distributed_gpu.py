"""Exact PLUGIN through Dask on one GPU worker against the plain gpu backend, in one run.

Usage: python benchmarks/distributed_gpu.py [--n 10000000] [--repeat 3] [--dtype float32]
       [--local gpu] [--output-dir DIR]

Issue 18's overhead target: a Dask worker with the gpu backend (``DaskBackend(client,
local="gpu")`` on a ``LocalCluster`` of 1 worker x 1 thread, one worker per GPU as dask-cuda
would start it) computing exact PLUGIN at n = 10^7 within 10 % of the plain gpu backend in this
process.  Data: a bimodal sample (half N(-2, 0.5^2), half N(2, 0.5^2)), seed 0, float64 on the
host.  Times: best of ``--repeat`` calls after one warm-up call, seconds.  ``--local cpu`` runs the
same comparison on the cpu backend (a quick check without a GPU).  Writes
distributed_gpu.{json,md} into benchmarks/results/ (or ``--output-dir``).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
from distributed import Client, LocalCluster

from parzen.bandwidth import plugin
from parzen.distributed import DaskBackend

RESULTS = Path(__file__).parent / "results"


def best_of(fn, repeat: int) -> tuple[float, float]:
    """(best seconds of ``repeat`` calls after one warm-up call, the last answer)."""
    value = fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return min(times), value


def device_name(local: str) -> str:
    if local != "gpu":
        return f"{platform.processor() or 'cpu'} (cpu backend)"
    import torch

    return torch.cuda.get_device_name(0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e7)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    parser.add_argument("--local", default="gpu", choices=["gpu", "cpu"])
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    n, dtype = int(args.n), np.dtype(args.dtype)
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(-2.0, 0.5, n // 2), rng.normal(2.0, 0.5, n - n // 2)])
    plain_s, h_plain = best_of(lambda: plugin(x, backend=args.local, dtype=dtype, method="exact"), args.repeat)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        backend = DaskBackend(client, local=args.local, local_threads=None)
        dask_s, h_dask = best_of(lambda: plugin(x, backend=backend, dtype=dtype, method="exact"), args.repeat)
    row = {
        "n": n, "dtype": str(dtype), "device": device_name(args.local), "plain_s": plain_s, "dask_s": dask_s,
        "overhead": dask_s / plain_s - 1.0, "h_plain": h_plain, "h_dask": h_dask,
        "rel_h": abs(h_dask / h_plain - 1.0),
    }
    print(json.dumps(row))
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "distributed_gpu.json").write_text(json.dumps(row, indent=2) + "\n")
    (args.output_dir / "distributed_gpu.md").write_text(
        f"# Exact PLUGIN through Dask on one {args.local} worker\n\n"
        f"Device: {row['device']}. n = {n}, {dtype}; best of {args.repeat} after a warm-up. Command: "
        f"`python benchmarks/distributed_gpu.py --n {args.n:g} --local {args.local} --dtype {dtype}`.\n\n"
        "| configuration | seconds | h |\n| --- | ---: | ---: |\n"
        f"| {args.local} backend in this process | {plain_s:.3f} | {h_plain:.10g} |\n"
        f"| DaskBackend, 1 worker x 1 thread, local={args.local} | {dask_s:.3f} | {h_dask:.10g} |\n\n"
        f"Overhead of going through Dask: {100 * row['overhead']:+.1f} % (target <= 10 %); "
        f"h differs by {row['rel_h']:.1e} relative.\n"
    )


if __name__ == "__main__":
    main()
