"""Exact plug-in bandwidth matrices on the GPU (issue 20's target: plugin_H at n = 10^5, d = 2 on
the H100 <= 0.5 s).

Usage (on a machine with a CUDA GPU):  python benchmarks/gpu_plugin_H.py [--output-dir DIR] [--quick]

For each (selector, n, d) on a seeded correlated normal mixture: the wall time of the public call
with ``backend="gpu"`` (float32, the default, and float64), median of 3 after a warm-up that
compiles the kernels, host work included; the cpu backend (Numba, all cores) in the same run up
to n = 2 x 10^4; and the largest relative difference of each H from the float64 answer (the
cpu backend's where it ran, else the GPU's float64).  JSON + markdown in benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from parzen import bandwidth as bw
from parzen.backends import gpu

RESULTS = Path(__file__).parent / "results"
CPU_MAX_N = 20_000


def sample(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d)) / np.sqrt(d) + np.eye(d)
    X = rng.normal(size=(n, d)) @ A.T
    X[: n // 3] += 2.0
    return X


def timed(call, repeat: int = 3) -> tuple[float, np.ndarray]:
    value = call()
    times = []
    for _ in range(repeat):
        if not gpu.INTERPRETED:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        value = call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), np.atleast_2d(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--selectors", default="plugin_H,plugin_diag,scv_H")
    parser.add_argument("--name", default="gpu_plugin_H")
    args = parser.parse_args()
    sizes = [(200, 2), (100, 3)] if args.quick else [(10_000, 2), (20_000, 2), (100_000, 2), (100_000, 3)]
    rows: list[dict] = []
    device = "TRITON_INTERPRET=1 (CPU)" if gpu.INTERPRETED else torch.cuda.get_device_name()
    for name in args.selectors.split(","):
        selector = getattr(bw, name)
        for n, d in sizes if name != "scv_H" else sizes[:1] + sizes[2:3]:
            X = sample(n, d)
            row: dict = {"selector": name, "n": n, "d": d}
            row["gpu_float32_s"], H32 = timed(lambda X=X, selector=selector: selector(X, backend="gpu", method="exact"))
            row["gpu_float64_s"], H64 = timed(lambda X=X, selector=selector: selector(X, backend="gpu", dtype=np.float64, method="exact"), repeat=1)
            reference = H64
            if n <= CPU_MAX_N:
                row["cpu_s"], reference = timed(lambda X=X, selector=selector: selector(X, backend="cpu", method="exact"), repeat=1)
            scale = np.abs(reference).max()
            row["gpu_float32_rel_diff"] = float(np.abs(H32 - reference).max() / scale)
            row["gpu_float64_rel_diff"] = float(np.abs(H64 - reference).max() / scale)
            row["H_gpu_float32"] = H32.tolist()
            rows.append(row)
            print(json.dumps({k: v for k, v in row.items() if not k.startswith("H_")}), flush=True)
            write(args.output_dir, args.name, device, rows)


def write(output_dir: Path, name: str, device: str, rows: list[dict]) -> None:
    """The JSON and markdown of the rows so far."""
    lines = [
        "# Exact plug-in bandwidth matrices on the GPU (issue 20)", "",
        (f"Device: {device}. Command: `python benchmarks/gpu_plugin_H.py`. Wall time of the public call "
         "(float32: median of 3 after a warm-up, float64: one call after it; host work included), seeded correlated normal mixture; `rel diff`: "
         "largest difference from the float64 H (the cpu backend's where it ran, else the GPU's float64), "
         "relative to H's largest entry."), "",
        "| selector | n | d | gpu float32 s | gpu float64 s | cpu s | float32 rel diff | float64 rel diff |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cpu = f"{r['cpu_s']:.3f}" if "cpu_s" in r else "skipped"
        lines.append(f"| {r['selector']} | {r['n']} | {r['d']} | {r['gpu_float32_s']:.3f} | {r['gpu_float64_s']:.3f} | {cpu} | "
                     f"{r['gpu_float32_rel_diff']:.1e} | {r['gpu_float64_rel_diff']:.1e} |")
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / f"{name}.json").write_text(json.dumps({"device": device, "rows": rows}, indent=1))
    (output_dir / f"{name}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
