"""LSCV_H's g(H) pair sums on the tensor cores (issue 20, item 5: the LSCV sums of d > 1 in Gram form).

Usage (on a machine with a CUDA GPU):  python benchmarks/gpu_lscv_tensor_cores.py [--output-dir DIR]
       [--sizes 16384x2,16384x16,65536x4] [--repeat 30]

For each n x d it prepares the whitened pair sums as ``lscv_H`` does
(``GpuBackend.prepare_whitened_pair_sum_sq``, float32, data on the device) and times calls with
one scale that alternate two factors M (so that every call whitens anew, as Nelder-Mead's do),
median wall time per call with synchronisation, CUDA graphs included (the backend replays from a
call's third occurrence): the tensor-core form (``lscv_tc_one_scale_kernel``) and the former Gram
kernel of float32 multiply-adds (``lscv_one_scale_kernel``, ``_WhitenedData.tensor_cores`` off), in
the same process.  Errors: largest relative error of the two sums against float64 sums on the
device (difference form).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from parzen.backends import gpu

RESULTS = Path(__file__).parent / "results"


def mixture(n: int, d: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) @ (rng.normal(size=(d, d)) / np.sqrt(d) + np.eye(d)).T
    X[: n // 3] += 3.0
    return X


def reference(Z: np.ndarray, M: np.ndarray) -> np.ndarray:
    """float64 (sum 2^(-a s), sum 2^(-2 a s)) over i < j, a = log2(e) / 4, s = |M^-1 (z_i - z_j)|^2."""
    y = torch.from_numpy(np.linalg.solve(M, Z.T).T.copy()).to(gpu.DEVICE)
    a = 1.0 / (4.0 * np.log(2.0))
    totals = np.zeros(2)
    rows = max(1, (1 << 26) // (len(y) * y.shape[1]))
    for start in range(0, len(y), rows):
        block = y[start : start + rows]
        s = ((block[:, None, :] - y[None, :, :]) ** 2).sum(dim=2)
        upper = torch.arange(len(y), device=gpu.DEVICE)[None, :] > torch.arange(start, start + len(block), device=gpu.DEVICE)[:, None]
        e = torch.where(upper, torch.exp2(-a * s), 0.0)
        totals += [float(e.sum()), float((e * e).sum())]
    return totals


def time_calls(sums, Ms, repeat: int) -> float:
    for M in Ms * 3:  # warm-up: compile, then the graphs' captures
        sums(M, np.ones(1))
    times = []
    for k in range(repeat):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        sums(Ms[k % 2], np.ones(1))
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(n: int, d: int, repeat: int) -> dict:
    X = mixture(n, d, seed=n + d)
    Z = X - X.mean(axis=0)
    L = np.linalg.cholesky(np.cov(Z.T))
    Ms = [L * 0.4, L * 0.45]
    row: dict = {"n": n, "d": d, "pairs": n * (n - 1) // 2}
    expected = reference(Z, Ms[0])
    for label, tensor_cores in (("tc", True), ("former", False)):
        gpu._WhitenedData.tensor_cores = tensor_cores
        backend = gpu.GpuBackend()
        sums = backend.prepare_whitened_pair_sum_sq(Z, "lscv", dtype=np.float32)
        got = np.asarray(sums(Ms[0], np.ones(1)))[0]
        row[f"{label}_err"] = float(np.max(np.abs(got - expected) / expected))
        row[f"{label}_s"] = time_calls(sums, Ms, repeat)
        backend.close()
    gpu._WhitenedData.tensor_cores = True
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    parser.add_argument("--sizes", default="16384x2,16384x4,16384x16,65536x4,65536x16")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    rows = [measure(*(int(v) for v in size.split("x")), args.repeat) for size in args.sizes.split(",")]
    meta = {"device": torch.cuda.get_device_name(), "command": "python benchmarks/gpu_lscv_tensor_cores.py --sizes " + args.sizes}
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "gpu_lscv_tensor_cores.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [(f"# LSCV_H's g(H) sums on the tensor cores\n\nDevice: {meta['device']}. Command: `{meta['command']}`. "
             "Per-call times: median wall ms of prepared float32 sums, one scale, a new M each call (graphs replayed); "
             "`err`: largest relative error of the two sums against float64.\n"),
             "| n | d | tc ms | tc err | former ms | former err |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['n']} | {r['d']} | {1e3 * r['tc_s']:.3f} | {r['tc_err']:.1e} | {1e3 * r['former_s']:.3f} | "
                     f"{r['former_err']:.1e} |")
    (args.output_dir / "gpu_lscv_tensor_cores.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
