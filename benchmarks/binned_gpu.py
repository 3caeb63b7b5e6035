"""Binned PLUGIN and binned KDE on the gpu backend, from host memory, against the cpu path.

Usage: python benchmarks/binned_gpu.py [--plugin-n 1000000000] [--kde-n 100000000] [--grid 1024]
       [--repeat 3] [--no-cpu] [--no-exact] [--output-dir DIR]

Targets (issue 17, one H100): binned PLUGIN of n = 10^9 float32 values in host memory <= 1 s;
binned KDE of n = 10^8 2-D float32 points on a 1024^2 grid <= 0.5 s.  Both are timed from a
NumPy float32 array in ordinary (pageable) host memory to the answer on the host, transfers
included, best of ``--repeat`` calls after one warm-up call (which compiles the kernels and
allocates the page-locked buffers).  The cpu path (Numba binning, ``scipy.fft``) runs once on the
same arrays for the ratio, and is the float64 reference of the errors: |h_gpu / h_cpu - 1|, and
for the counts and the density the largest absolute difference over the largest value.  With
``--no-exact`` left out, the binned density is also compared with the exact KDE (gpu backend,
float64) at 256 data points where the density is at least 1e-3 of its maximum.

Data: PLUGIN, a bimodal sample (half N(-2, 0.5^2), half N(2, 0.5^2)); KDE, a correlated
bivariate normal (unit variances, correlation 0.5) with H = n^(-1/3) Sigma (the normal-scale
rule for d = 2).  Both drawn on the GPU (seed 0) and copied to host memory first.

Writes binned_gpu.{json,md} into benchmarks/results/ (or ``--output-dir``).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from parzen import KDE
from parzen.backends import resolve_backend
from parzen.bandwidth import plugin_stages
from parzen.binned import GridSpec, density_on_grid

RESULTS = Path(__file__).parent / "results"


def timed(call, repeat: int) -> tuple[float, object]:
    """(best seconds over ``repeat`` calls after a warm-up call, the warm-up's result)."""
    result = call()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best, result


def once(call) -> tuple[float, object]:
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, result


def host_copy_rates(torch) -> dict:
    """GB/s of a 1 GiB host-to-device copy from page-locked and from pageable memory."""
    n = 1 << 28
    device = torch.empty(n, dtype=torch.float32, device="cuda")
    rates = {}
    for name, host in (("pinned", torch.ones(n, dtype=torch.float32, pin_memory=True)),
                       ("pageable", torch.ones(n, dtype=torch.float32))):
        best = float("inf")
        for _ in range(3):
            torch.cuda.synchronize()
            start = time.perf_counter()
            device.copy_(host, non_blocking=True)
            torch.cuda.synchronize()
            best = min(best, time.perf_counter() - start)
        rates[name] = 4 * n / best / 1e9
    return rates


def bimodal_float32(torch, n: int) -> np.ndarray:
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(n, generator=g, device="cuda", dtype=torch.float32) * 0.5
    x[: n // 2] -= 2.0
    x[n // 2 :] += 2.0
    return x.cpu().numpy()


def correlated_float32(torch, n: int) -> np.ndarray:
    g = torch.Generator(device="cuda").manual_seed(0)
    z = torch.randn((n, 2), generator=g, device="cuda", dtype=torch.float32)
    z[:, 1] = 0.5 * z[:, 0] + (0.75**0.5) * z[:, 1]
    return z.cpu().numpy()


def kernel_only_seconds(torch, X: np.ndarray, spec: GridSpec, gpu, repeat: int) -> float:
    """Seconds of the binning kernel alone, the rows already in device memory (the floor of a pass
    without transfers)."""
    from parzen.backends.gpu import DeviceGrid

    rows = torch.from_numpy(X).cuda()

    def run():
        grid = DeviceGrid(spec, gpu.tiles)
        torch.cuda.synchronize()
        start = time.perf_counter()
        grid.add(rows, None, 0)
        torch.cuda.synchronize()
        return time.perf_counter() - start

    run()
    return min(run() for _ in range(repeat))


def plugin_rows(x: np.ndarray, gpu, repeat: int, cpu: bool) -> dict:
    seconds, stages = timed(lambda: plugin_stages(x, backend=gpu, method="binned"), repeat)
    summary_s, summary = timed(lambda: gpu.column_summary(x), repeat)
    spec = GridSpec.covering(summary.lows, summary.highs, stages.grid_size)
    bin_s, counts = timed(lambda: gpu.linear_bin(x, spec), repeat)
    import torch

    row = {"n": int(x.size), "dtype": "float32", "grid": stages.grid_size, "gpu_s": seconds, "gpu_h": stages.h,
           "gpu_summary_pass_s": summary_s, "gpu_binning_pass_s": bin_s,
           "gpu_kernel_only_s": kernel_only_seconds(torch, x, spec, gpu, repeat)}
    if cpu:
        cpu_s, cpu_stages = once(lambda: plugin_stages(x, backend="cpu", method="binned"))
        cpu_counts = resolve_backend("cpu").linear_bin(x, spec).counts
        row.update(cpu_s=cpu_s, cpu_h=cpu_stages.h, ratio=cpu_s / seconds,
                   h_rel_diff=abs(stages.h / cpu_stages.h - 1.0),
                   counts_rel_diff=float(np.abs(counts.counts - cpu_counts).max() / cpu_counts.max()),
                   total_rel_diff=abs(counts.total / x.size - 1.0))
    return row


def kde_rows(X: np.ndarray, grid: int, gpu, repeat: int, cpu: bool, exact: bool) -> dict:
    n = len(X)
    sigma = np.cov(X[: 1 << 20].astype(np.float64), rowvar=False)
    H = n ** (-1.0 / 3.0) * sigma
    seconds, density = timed(lambda: density_on_grid(X, H, grid_size=grid, backend=gpu), repeat)
    summary_s, _summary = timed(lambda: gpu.column_summary(X, moments=False), repeat)
    bin_s, _ = timed(lambda: gpu.linear_bin(X, density.spec), repeat)
    import torch

    row = {"n": n, "d": 2, "dtype": "float32", "grid": list(density.spec.sizes), "gpu_s": seconds,
           "gpu_range_pass_s": summary_s, "gpu_binning_pass_s": bin_s,
           "gpu_kernel_only_s": kernel_only_seconds(torch, X, density.spec, gpu, repeat), "H": H.tolist()}
    if cpu:
        cpu_s, cpu_density = once(lambda: density_on_grid(X, H, grid_size=grid, backend="cpu"))
        row.update(cpu_s=cpu_s, ratio=cpu_s / seconds,
                   density_rel_diff=float(np.abs(density.values - cpu_density.values).max() / cpu_density.values.max()))
    if exact:
        rng = np.random.default_rng(0)
        Q = X[rng.choice(n, 4096, replace=False)].astype(np.float64)
        binned_q = density(Q)
        Q = Q[binned_q >= 1e-3 * density.values.max()][:256]
        exact_s, exact_q = once(lambda: KDE(bandwidth=H, backend=gpu, dtype=np.float64, method="exact").fit(X).pdf(Q))
        row.update(exact_points=len(Q), exact_s=exact_s,
                   binned_vs_exact_max_rel=float(np.max(np.abs(density(Q) / exact_q - 1.0))))
    return row


def markdown(report: dict) -> str:
    p, k = report["plugin"], report["kde"]
    lines = [
        "# Binned estimation on the GPU",
        "",
        f"Device: {report['device']} (torch {report['torch']}, triton {report['triton']}); host: {report['host']}.",
        (f"Host-to-device copy of 1 GiB: {report['copy_gbs']['pinned']:.1f} GB/s from page-locked memory, "
        f"{report['copy_gbs']['pageable']:.1f} GB/s from pageable memory."),
        ("Times: from a NumPy float32 array in pageable host memory to the answer on the host, transfers "
        f"included, best of {report['repeat']} after a warm-up call; cpu: one call on the same machine "
        "(Numba binning, scipy.fft). Differences: against the cpu path (float64 throughout)."),
        "",
        ("| computation | n | grid | gpu s | first pass s | binning pass s | binning kernel alone s | cpu s | cpu/gpu "
         "| difference |"),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        (f"| binned PLUGIN | {p['n']:.0e} | {p['grid']} | {p['gpu_s']:.3f} | {p['gpu_summary_pass_s']:.3f} | "
        f"{p['gpu_binning_pass_s']:.3f} | {p['gpu_kernel_only_s']:.4f} | {p.get('cpu_s', float('nan')):.2f} | {p.get('ratio', float('nan')):.1f} | "
        f"h {p.get('h_rel_diff', float('nan')):.1e}, counts {p.get('counts_rel_diff', float('nan')):.1e} |"),
        (f"| binned KDE 2-D | {k['n']:.0e} | {k['grid'][0]}x{k['grid'][1]} | {k['gpu_s']:.3f} | {k['gpu_range_pass_s']:.3f} | "
        f"{k['gpu_binning_pass_s']:.3f} | {k['gpu_kernel_only_s']:.4f} | {k.get('cpu_s', float('nan')):.2f} | {k.get('ratio', float('nan')):.1f} | "
        f"density {k.get('density_rel_diff', float('nan')):.1e} |"),
        "",
        f"PLUGIN h: gpu {p['gpu_h']:.10g}" + (f", cpu {p['cpu_h']:.10g}" if "cpu_h" in p else "") + ".",
    ]
    if "binned_vs_exact_max_rel" in k:
        lines.append(f"Binned KDE against the exact KDE (gpu, float64) at {k['exact_points']} data points where the "
                     f"density is at least 1e-3 of its maximum: largest relative difference "
                     f"{k['binned_vs_exact_max_rel']:.1e}.")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plugin-n", type=float, default=1e9)
    parser.add_argument("--kde-n", type=float, default=1e8)
    parser.add_argument("--grid", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-cpu", action="store_true")
    parser.add_argument("--no-exact", action="store_true")
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args()

    import torch
    import triton

    gpu = resolve_backend("gpu")
    report = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
              "host": f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads",
              "repeat": args.repeat, "copy_gbs": host_copy_rates(torch)}
    x = bimodal_float32(torch, int(args.plugin_n))
    report["plugin"] = plugin_rows(x, gpu, args.repeat, not args.no_cpu)
    print(json.dumps(report["plugin"]), flush=True)
    del x
    X = correlated_float32(torch, int(args.kde_n))
    report["kde"] = kde_rows(X, args.grid, gpu, args.repeat, not args.no_cpu, not args.no_exact)
    print(json.dumps(report["kde"]), flush=True)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "binned_gpu.json").write_text(json.dumps(report, indent=2))
    text = markdown(report)
    (args.output_dir / "binned_gpu.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
