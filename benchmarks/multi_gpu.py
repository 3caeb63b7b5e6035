"""The multi-GPU run (issue 21): exact selectors, KDE and sparse grids on 1, 2, 4 ... GPUs of one host.

Usage::

    python benchmarks/multi_gpu.py [--gpus 1 2 4 8] [--sections plugin lscv kde sparsegrid]
        [--plugin-n 1e7] [--lscv-n 1e6] [--lscv-d 16] [--kde-n 1e7] [--sg-points 5e8] [--sg-iterations 250]
        [--local gpu|cpu] [--output-dir DIR]

Sections, each written to ``<output-dir>/multi_gpu_<section>.{json,md}`` (default benchmarks/results/):

``plugin``
    Exact PLUGIN (``plugin(x, method="exact", dtype=float32)``) at n = ``--plugin-n`` (bimodal data:
    half N(-2, 0.5^2), half N(2, 0.5^2), seed 0) through :class:`parzen.distributed.DaskBackend` on a
    cluster of one Dask worker per GPU (1 thread each), for each count of ``--gpus``.
``lscv``
    Exact LSCV_h selection (``lscv_h(X, method="exact")``, the papers' grid of 150 h and its
    refinement) at n = ``--lscv-n``, d = ``--lscv-d`` (N(0, Sigma) data, Sigma with unit variances and
    correlation 0.5, seed 1), the same way.
``kde``
    Exact KDE evaluation, n = m = ``--kde-n``, d = 1 (``KDE(bandwidth=h, method="exact").fit(x).pdf(q)``,
    h = 0.05; data as for ``plugin``, queries uniform on [-4, 4]), the same way.
``sparsegrid``
    Paper 004's Friedman1 regression system, level 4, "modlinear" basis (2 001 grid points in 10-D),
    ``--sg-iterations`` conjugate-gradient iterations (SciPy's ``cg``, tol 0) of
    (1/m B B^T + 1e-6 I) alpha = 1/m B y on ``--sg-points`` float32 points held in pinned host
    memory and streamed to the GPUs at every product (``GpuSparseGrid(devices=k)``: one process,
    chunk c to GPU c mod k).  Reported: seconds per iteration, points x iterations per second per
    GPU, and the largest difference of alpha from the one-GPU solve.

Every configuration's answer is compared with the one-GPU answer (relative difference; the
issue's bound is 1e-5 for float32).  Dask clusters: dask-cuda's ``LocalCUDACluster`` where it
imports, else Dask's own ``SpecCluster`` of ``Nanny`` workers each given ``CUDA_VISIBLE_DEVICES``
(the same one-worker-per-GPU layout).  NVLink multicast stays off (``NCCL_NVLS_ENABLE=0`` and the
device tool's other variables are set for the workers).  ``--local cpu`` runs the Dask sections
on CPU workers (a check of the script on a machine without GPUs; "GPUs" are then workers).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

RESULTS = Path(__file__).parent / "results"
#: Set for every worker: NVLink multicast off (see the device tool's KINDS.md).
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
SECTIONS = ("plugin", "lscv", "kde", "sparsegrid")


def gpu_cluster(gpus: int, local: str):
    """(cluster, kind): one Dask worker process per GPU (or per CPU worker for ``local="cpu"``), 1 thread each."""
    from distributed import LocalCluster, Nanny, Scheduler, SpecCluster

    os.environ.update(NO_MULTICAST)
    if local == "cpu":
        return LocalCluster(n_workers=gpus, threads_per_worker=1, processes=True, dashboard_address=None), "LocalCluster"
    try:
        from dask_cuda import LocalCUDACluster

        visible = ",".join(str(i) for i in range(gpus))
        return LocalCUDACluster(CUDA_VISIBLE_DEVICES=visible, threads_per_worker=1, dashboard_address=None), \
            "dask_cuda.LocalCUDACluster"
    except (ImportError, RuntimeError, ValueError, TypeError) as exc:  # missing, or not working beside this Dask
        print(f"note: dask_cuda.LocalCUDACluster unavailable ({type(exc).__name__}: {exc}); using a SpecCluster", flush=True)
    workers = {
        f"gpu{i}": {"cls": Nanny, "options": {"nthreads": 1, "env": {"CUDA_VISIBLE_DEVICES": str(i), **NO_MULTICAST}}}
        for i in range(gpus)
    }
    scheduler = {"cls": Scheduler, "options": {"dashboard_address": None}}
    return SpecCluster(workers=workers, scheduler=scheduler), "SpecCluster of Nanny workers, CUDA_VISIBLE_DEVICES each"


def bimodal(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.concatenate([rng.normal(-2.0, 0.5, n // 2), rng.normal(2.0, 0.5, n - n // 2)])


def correlated(n: int, d: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sigma = np.full((d, d), 0.5) + 0.5 * np.eye(d)
    return rng.standard_normal((n, d)) @ np.linalg.cholesky(sigma).T


def dask_problem(section: str, args):
    """(warm-up call, timed call, size label): both take a backend and return the answer."""
    from parzen import KDE
    from parzen.bandwidth import lscv_h, plugin

    f32 = np.float32
    if section == "plugin":
        n = int(args.plugin_n)
        x = bimodal(n)
        return (lambda b: plugin(x[:100_000], backend=b, dtype=f32, method="exact"),
                lambda b: plugin(x, backend=b, dtype=f32, method="exact"), f"n = {n:,}, d = 1")
    if section == "lscv":
        n, d = int(args.lscv_n), args.lscv_d
        X = correlated(n, d)
        return (lambda b: lscv_h(X[:20_000], backend=b, dtype=f32, method="exact"),
                lambda b: lscv_h(X, backend=b, dtype=f32, method="exact"), f"n = {n:,}, d = {d}")
    n = int(args.kde_n)
    x, q = bimodal(n), np.random.default_rng(2).uniform(-4.0, 4.0, n)

    def kde(b, m=n):
        return KDE(bandwidth=0.05, backend=b, dtype=f32, method="exact").fit(x[:m]).pdf(q[:m])

    return (lambda b: kde(b, 100_000), kde, f"n = m = {n:,}, d = 1")


def relative_difference(answer, baseline) -> float:
    a, b = np.asarray(answer, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def run_dask_section(section: str, args) -> list[dict]:
    from distributed import Client

    from parzen.distributed import DaskBackend

    warm_up, timed, size = dask_problem(section, args)
    rows, baseline = [], None
    for gpus in args.gpus:
        cluster, kind = gpu_cluster(gpus, args.local)
        with cluster, Client(cluster) as client:
            client.wait_for_workers(gpus, timeout=120)
            backend = DaskBackend(client, local=args.local, local_threads=None if args.local == "gpu" else 1)
            warm_up(backend)  # compiles every kernel on every worker
            start = time.perf_counter()
            answer = timed(backend)
            seconds = time.perf_counter() - start
        baseline = answer if baseline is None else baseline
        rows.append({"section": section, "size": size, "gpus": gpus, "seconds": seconds, "cluster": kind,
                     "answer": float(answer) if np.ndim(answer) == 0 else None,
                     "rel_diff_vs_first": relative_difference(answer, baseline)})
        print(json.dumps(rows[-1]), flush=True)
    return with_speedups(rows)


def with_speedups(rows: list[dict]) -> list[dict]:
    """``rows`` with each one's speed-up over the first (scaled to one GPU) and its efficiency per GPU."""
    first = rows[0]["seconds"] * rows[0]["gpus"]
    for row in rows:
        row["speedup_vs_one"] = first / row["seconds"]
        row["efficiency"] = row["speedup_vs_one"] / row["gpus"]
    return rows


def friedman1_unit(m: int, seed: int, chunk: int = 1 << 22) -> tuple[np.ndarray, np.ndarray]:
    """Friedman1 points (float32, uniform on [0, 1]^10, the grid's own cube) and targets, in chunks."""
    X = np.empty((m, 10), dtype=np.float32)
    y = np.empty(m)
    for start in range(0, m, chunk):
        rng = np.random.default_rng([seed, start])
        block = rng.random((min(chunk, m - start), 10), dtype=np.float32)
        b = block.astype(np.float64)
        y[start : start + len(block)] = (10 * np.sin(np.pi * b[:, 0] * b[:, 1]) + 20 * (b[:, 2] - 0.5) ** 2
                                         + 10 * b[:, 3] + 5 * b[:, 4] + rng.normal(size=len(block)))
        X[start : start + len(block)] = block
    return X, y


def run_sparse_grid(args) -> list[dict]:
    from scipy.sparse.linalg import LinearOperator, cg

    from parzen.backends.sparse_grid_gpu import DeviceDesign
    from parzen.sparsegrid import SparseGrid

    m, iterations, lam = int(args.sg_points), args.sg_iterations, 1e-6
    start = time.perf_counter()
    X, y = friedman1_unit(m, seed=7)
    print(f"generated {m:,} Friedman1 points in {time.perf_counter() - start:.1f} s", flush=True)
    grid = SparseGrid(10, 4, "modlinear")
    rows, baseline = [], None
    for gpus in args.gpus:
        start = time.perf_counter()
        B = DeviceDesign(X, grid.codes, grid.offsets, grid.modified, np.float32, resident=False, devices=gpus)
        build_s = time.perf_counter() - start
        rhs = B.mult(y) / m
        B.normal(rhs)  # warm-up: compiles the kernels on every GPU

        def normal_system(p, design=B):
            return design.normal(p) / m + lam * p

        system = LinearOperator((grid.size, grid.size), matvec=normal_system, dtype=np.float64)
        start = time.perf_counter()
        alpha, _ = cg(system, rhs, rtol=0.0, atol=0.0, maxiter=iterations)
        cg_s = time.perf_counter() - start
        del B, system, normal_system  # frees this count's pinned chunks before the next
        baseline = alpha if baseline is None else baseline
        rows.append({
            "section": "sparsegrid", "size": f"m = {m:,}, d = 10, level 4 ({grid.size} grid points)", "gpus": gpus,
            "iterations": iterations, "build_s": build_s, "seconds": cg_s, "per_iteration_s": cg_s / iterations,
            "points_per_s_per_gpu": m * iterations / cg_s / gpus, "streamed": True,
            "rel_diff_vs_first": relative_difference(alpha, baseline),
        })
        print(json.dumps(rows[-1]), flush=True)
    return with_speedups(rows)


def device_name(local: str) -> str:
    if local != "gpu":
        return f"{platform.processor() or 'cpu'} (cpu workers)"
    import torch

    return f"{torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}"


def write(section: str, rows: list[dict], args, device: str) -> None:
    args.output_dir.mkdir(parents=True, exist_ok=True)
    command = "python benchmarks/multi_gpu.py " + " ".join(args.argv)
    payload = {"device": device, "command": command, "rows": rows}
    (args.output_dir / f"multi_gpu_{section}.json").write_text(json.dumps(payload, indent=2) + "\n")
    lines = [f"# Multi-GPU scaling: {section}", "", f"Device: {device}. Command: `{command}`.", "",
             "| problem | GPUs | seconds | speed-up vs 1 | efficiency | rel. diff vs 1 GPU | note |",
             "| --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for r in rows:
        note = r.get("cluster", "")
        if section == "sparsegrid":
            note = (f"{r['iterations']} CG iterations, {r['per_iteration_s']:.3f} s each, "
                    f"{r['points_per_s_per_gpu']:.3e} points/s per GPU, streamed from pinned host memory; "
                    f"operator build {r['build_s']:.1f} s")
        elif r.get("answer") is not None:
            note += f"; answer {r['answer']:.8g}"
        lines.append(f"| {r['size']} | {r['gpus']} | {r['seconds']:.3f} | {r['speedup_vs_one']:.2f} | "
                     f"{r['efficiency']:.2f} | {r['rel_diff_vs_first']:.1e} | {note} |")
    (args.output_dir / f"multi_gpu_{section}.md").write_text("\n".join(lines) + "\n")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, nargs="+", default=None, help="GPU counts (default: 1, 2, 4 ... visible)")
    parser.add_argument("--sections", nargs="+", choices=SECTIONS, default=list(SECTIONS))
    parser.add_argument("--plugin-n", type=float, default=1e7)
    parser.add_argument("--lscv-n", type=float, default=1e6)
    parser.add_argument("--lscv-d", type=int, default=16)
    parser.add_argument("--kde-n", type=float, default=1e7)
    parser.add_argument("--sg-points", type=float, default=5e8)
    parser.add_argument("--sg-iterations", type=int, default=250)
    parser.add_argument("--local", default="gpu", choices=["gpu", "cpu"])
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)
    if args.gpus is None:
        import torch

        visible = torch.cuda.device_count() if args.local == "gpu" else 2
        args.gpus = [k for k in (1, 2, 4, 8) if k <= visible]
    device = device_name(args.local)
    for section in args.sections:
        if section == "sparsegrid":
            rows = run_sparse_grid(args)
        else:
            rows = run_dask_section(section, args)
        write(section, rows, args, device)


if __name__ == "__main__":
    main()
