"""GPU backend benchmark (issue 4): the papers' problems on one GPU, end to end.

Usage (on a machine with a CUDA GPU):  python benchmarks/gpu_backend.py [--output-dir DIR]
       [--quick] [--sweep] [--cpu-max-pairs 2e10] [--torch-max-pairs 2e11]

For each problem and size it prints and writes (JSON + markdown) one row: the time of the
parzen call on the GPU (median of repeats after a warm-up that compiles the kernels, so calls
that replay the CUDA graphs the backend captures for repeated sizes; the notes add a first call
of each size for PLUGIN and LSCV_h; host
validation, centring and host<->device transfers included, as in the papers; the LSCV_h grid
rows time the pair sum from host rows to host sums, the same work as the PyTorch peer, and
note the public call's time; the g(H) rows time the call inside LSCV_H's loop), pairs per
second, the ratio to a plain PyTorch implementation of the same sum (chunked, no custom
kernel) and to the CPU backend (Numba, all cores), and the fraction of the GPU's limit:
per pair the kernel issues ``fp32`` arithmetic instructions and ``mufu`` exp2 instructions
(counted from ``parzen/backends/_triton_kernels.py``), whose rates are measured once here
by two Triton micro-kernels; each instruction takes an issue slot, so
limit = max(pairs * (fp32 + mufu) / fp32_rate, pairs * mufu / mufu_rate).
Peers above the --*-max-pairs budgets are skipped (reported as such, never extrapolated).

``--quick`` runs tiny sizes (a smoke test, also under TRITON_INTERPRET=1); ``--sweep`` times
tile / warp variants of each kernel at one size first.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import torch
import triton
import triton.language as tl

from parzen import KDE, backends
from parzen import bandwidth as bw
from parzen.backends import cpu, gpu
from parzen.bandwidth.lscv import ZOOM, ZOOM_TOL

RESULTS = Path(__file__).parent / "results"
#: The shared instances that backend="gpu" / "cpu" resolve to (the public calls below use them too).
GPU = backends.resolve_backend("gpu")
CPU = backends.resolve_backend("cpu")


# --- timing ----------------------------------------------------------------------------------


def median_seconds(call, repeat: int, min_total: float = 0.2) -> float:
    """Median wall time of ``call()`` after one warm-up; more repeats for fast calls."""
    call()
    if gpu.DEVICE.type == "cuda":
        torch.cuda.synchronize()
    times = []
    while len(times) < repeat or (sum(times) < min_total and len(times) < 200):
        t0 = time.perf_counter()
        call()
        if gpu.DEVICE.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def first_call_seconds(call) -> float:
    """Wall time of ``call()`` on data of a size the GPU backend has not seen (its kernels
    compiled): no CUDA graph captured yet, device buffers new.  Later calls of the same size
    replay graphs (see parzen.backends.gpu); the tables' medians are of such calls."""
    GPU.close()  # drops its CUDA graphs and device buffers
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    call()
    torch.cuda.synchronize()
    return time.perf_counter() - t0


# --- the chip's two rates, measured once ------------------------------------------------------

CHAINS, STEPS = 8, 512


@triton.jit
def _fma_rate_kernel(x_ptr, out_ptr, a, b, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y0, y1, y2, y3, y4, y5, y6, y7 = x, x + 1, x + 2, x + 3, x + 4, x + 5, x + 6, x + 7
    for _ in range(STEPS):
        y0, y1, y2, y3 = y0 * a + b, y1 * a + b, y2 * a + b, y3 * a + b
        y4, y5, y6, y7 = y4 * a + b, y5 * a + b, y6 * a + b, y7 * a + b
    tl.store(out_ptr + offs, y0 + y1 + y2 + y3 + y4 + y5 + y6 + y7)


@triton.jit
def _exp2_rate_kernel(x_ptr, out_ptr, STEPS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y0, y1, y2, y3, y4, y5, y6, y7 = x, x - 0.1, x - 0.2, x - 0.3, x - 0.4, x - 0.5, x - 0.6, x - 0.7
    for _ in range(STEPS):
        y0, y1, y2, y3 = tl.exp2(-y0), tl.exp2(-y1), tl.exp2(-y2), tl.exp2(-y3)
        y4, y5, y6, y7 = tl.exp2(-y4), tl.exp2(-y5), tl.exp2(-y6), tl.exp2(-y7)
    tl.store(out_ptr + offs, y0 + y1 + y2 + y3 + y4 + y5 + y6 + y7)


@triton.jit
def _empty_kernel(x_ptr):
    pass


def launch_floor() -> dict:
    """What any call that launches a kernel and waits for it pays: an empty Triton launch and
    synchronisation, and a float64 scalar copied to the host (seconds, medians)."""
    x = torch.zeros(1, dtype=torch.float64, device=gpu.DEVICE)
    return {"launch_and_sync_s": median_seconds(lambda: _empty_kernel[(1,)](x), 50),
            "scalar_to_host_s": median_seconds(lambda: x.cpu(), 50)}


def chip_rates(quick: bool) -> dict:
    """FP32 FMA instructions/s and exp2 (MUFU) instructions/s of this GPU, measured."""
    n = 1 << (12 if quick else 24)
    block = 256
    x = torch.rand(n, device=gpu.DEVICE)
    out = torch.empty_like(x)
    grid = (n // block,)
    steps = 4 if quick else STEPS
    fma = median_seconds(lambda: _fma_rate_kernel[grid](x, out, 0.999, 0.001, STEPS=steps, BLOCK=block), 3)
    ex2 = median_seconds(lambda: _exp2_rate_kernel[grid](x, out, STEPS=steps, BLOCK=block), 3)
    return {"fp32_per_s": n * CHAINS * steps / fma, "mufu_per_s": n * CHAINS * steps / ex2}


#: Instructions per pair of each kernel: (fp32 arithmetic, exp2).  Hermite with DEGREE m
#: (x pre-scaled): sub, mul, min, m FMA (Horner), exp2, FMA into the accumulator.
def hermite_ops(order: int) -> tuple[int, int]:
    return 3 + order // 2 + 1, 1


def lscv_ops(d: int, scales: int) -> tuple[int, int]:
    """Per pair: d (sub + FMA) for s, then per scale mul, exp2, add, FMA (e*e) accumulated."""
    return 2 * d + 3 * scales, scales


def kde_ops(d: int) -> tuple[int, int]:
    """Per pair: d (sub + FMA) for s, exp2, FMA with the weight."""
    return 2 * d + 1, 1


def limit_seconds(pairs: float, ops: tuple[int, int], rates: dict) -> float:
    """The issue limit: every instruction, exp2 included, takes one of the schedulers' issue
    slots (one warp instruction per clock, the fp32 rate); exp2 also queues on its own pipe."""
    fp32, mufu = ops
    return max(pairs * (fp32 + mufu) / rates["fp32_per_s"], pairs * mufu / rates["mufu_per_s"])


# --- plain PyTorch versions of the same sums (chunked, no custom kernel) ----------------------


def _row_chunks(n: int, rows: int):
    for start in range(0, n, rows):
        yield slice(start, min(start + rows, n))


def torch_plugin_sum(x: np.ndarray, g: float, order: int) -> float:
    """sum_{i<j} phi^(r)((x_i - x_j)/g) as a PyTorch user would write it: (full - diagonal)/2."""
    xt = torch.from_numpy(x - x.mean()).to(gpu.DEVICE, torch.float32)
    coef = torch.tensor(np.polynomial.hermite_e.herme2poly([0] * order + [1]), device=gpu.DEVICE)
    total = torch.zeros((), dtype=torch.float64, device=gpu.DEVICE)
    rows = max(1, (1 << 27) // xt.numel())
    for chunk in _row_chunks(xt.numel(), rows):
        u = (xt[chunk, None] - xt[None, :]) / g
        p = torch.zeros_like(u)
        for c in coef.flip(0):
            p = p * u + c.float()
        total += (p * torch.exp(-0.5 * u * u)).sum(dtype=torch.float64)
    diagonal = x.size * float(coef[0])
    return float((total - diagonal) / 2) / math.sqrt(2 * math.pi)


def on_device(Y: np.ndarray) -> torch.Tensor:
    """Centred float32 rows on the GPU: what the PyTorch sums start from."""
    return torch.from_numpy(Y - Y.mean(axis=0)).to(gpu.DEVICE, torch.float32)


def torch_lscv_sums(Yt: torch.Tensor, h: np.ndarray) -> np.ndarray:
    """The LSCV pair sums of :meth:`parzen.backends.gpu.GpuBackend.pair_sum_sq` on rows already on the GPU."""
    n = Yt.shape[0]
    out = torch.zeros((h.size, 2), dtype=torch.float64, device=gpu.DEVICE)
    rows = max(1, (1 << 26) // n)
    a = torch.from_numpy(1.0 / (4.0 * h * h)).to(gpu.DEVICE, torch.float32)
    for chunk in _row_chunks(n, rows):
        s = torch.cdist(Yt[chunk], Yt).square()  # a user's first choice; Gram-based, see notes
        mask = torch.arange(n, device=gpu.DEVICE)[None, :] > torch.arange(chunk.start, chunk.stop, device=gpu.DEVICE)[:, None]
        s = torch.where(mask, s, torch.inf)
        for k in range(h.size):
            e = torch.exp(-a[k] * s)
            out[k, 0] += e.sum(dtype=torch.float64)
            out[k, 1] += (e * e).sum(dtype=torch.float64)
    return out.cpu().numpy()


def torch_kde(Z: np.ndarray, Q: np.ndarray, h: float) -> np.ndarray:
    Zt = torch.from_numpy(Z / h).to(gpu.DEVICE, torch.float32)
    Qt = torch.from_numpy(Q / h).to(gpu.DEVICE, torch.float32)
    out = torch.empty(Qt.shape[0], dtype=torch.float64, device=gpu.DEVICE)
    rows = max(1, (1 << 27) // Zt.shape[0])
    for chunk in _row_chunks(Qt.shape[0], rows):
        out[chunk] = torch.exp(-0.5 * torch.cdist(Qt[chunk], Zt).square()).sum(dim=1, dtype=torch.float64)
    return (out / (Z.shape[0] * h * math.sqrt(2 * math.pi))).cpu().numpy()


# --- the problems -----------------------------------------------------------------------------


def mixture(n: int, d: int, seed: int = 0) -> np.ndarray:
    """A seeded, tie-free two-component normal mixture."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d)) / np.sqrt(d) + np.eye(d)
    X = rng.normal(size=(n, d)) @ A.T
    X[: n // 3] += 3.0
    return X


def run(args) -> list[dict]:
    rates = {**chip_rates(args.quick), **launch_floor()}
    print(f"measured: {rates['fp32_per_s']:.3e} fp32 FMA/s, {rates['mufu_per_s']:.3e} exp2/s; an empty kernel "
          f"launched and waited for {1e3 * rates['launch_and_sync_s']:.4f} ms, a scalar to the host "
          f"{1e3 * rates['scalar_to_host_s']:.4f} ms", flush=True)
    rows: list[dict] = []

    def row(problem, n, d, seconds, pairs, ops, torch_seconds=None, cpu_seconds=None, note=""):
        limit = limit_seconds(pairs, ops, rates)
        entry = {
            "problem": problem, "n": n, "d": d, "gpu_ms": 1e3 * seconds, "pairs_per_s": pairs / seconds,
            "vs_torch": None if torch_seconds is None else torch_seconds / seconds,
            "vs_cpu": None if cpu_seconds is None else cpu_seconds / seconds,
            "fraction_of_limit": limit / seconds, "limit_ms": 1e3 * limit, "note": note,
        }
        rows.append(entry)
        print(_format_row(entry), flush=True)

    quick = args.quick
    # PLUGIN: psi6 and psi4 sums, n(n-1)/2 pairs each.
    for n in (256, 1000) if quick else (32768, 262144, 1 << 20):
        x = mixture(n, 1)[:, 0]
        seconds = median_seconds(lambda x=x: bw.plugin(x, backend="gpu"), args.repeat)
        pairs = n * (n - 1)
        st = bw.plugin_stages(x, backend="gpu")
        torch_s = _maybe(pairs, args.torch_max_pairs, lambda x=x, st=st: torch_plugin_sum(x, st.g1, 6) + torch_plugin_sum(x, st.g2, 4))
        cpu_s = _maybe(pairs, args.cpu_max_pairs, lambda x=x: bw.plugin(x, backend="cpu", dtype=np.float32))
        ops = tuple(np.add(hermite_ops(6), hermite_ops(4)) / 2)
        first = first_call_seconds(lambda x=x: bw.plugin(x, backend="gpu"))
        row("PLUGIN (h)", n, 1, seconds, pairs, ops, torch_s, cpu_s,
            note=f"h = {bw.plugin(x, backend='gpu'):.6g}; a first call of this size {1e3 * first:.3f} ms")
    if not quick:  # heavy tails: most pairs lie beyond the reach of the pilot bandwidths
        n = 1 << 20
        x = np.random.default_rng(1).standard_t(3, size=n)
        seconds = median_seconds(lambda x=x: bw.plugin(x, backend="gpu"), args.repeat)
        row("PLUGIN (h), Student t3 data", n, 1, seconds, n * (n - 1), tuple(np.add(hermite_ops(6), hermite_ops(4)) / 2),
            note="pairs whose terms underflow to exactly 0 are skipped (sorted data), so this can pass the limit")
    # LSCV_h: the papers' grid of 150 h in one pass, and the full selection with refinement.
    for n in (64, 200) if quick else (1024, 16384, 65536):
        d = 16
        X = mixture(n, d)
        h = bw.reference_h0(n, d) * np.linspace(0.25, 4, 150)
        # the sum itself, from host rows to host sums (transfers included), as PyTorch does it
        Y = np.linalg.solve(np.linalg.cholesky(np.cov(X.T)), (X - X.mean(axis=0)).T).T
        seconds = median_seconds(lambda Y=Y, h=h: GPU.pair_sum_sq(Y, "lscv", h), args.repeat)
        public = median_seconds(lambda X=X, h=h: bw.lscv_h_objective(X, h, backend="gpu"), args.repeat)
        pairs = n * (n - 1) / 2
        torch_s = _maybe(pairs * 150, args.torch_max_pairs, lambda Y=Y, h=h: torch_lscv_sums(on_device(Y), h))
        cpu_s = _maybe(pairs * 150, args.cpu_max_pairs, lambda Y=Y, h=h: CPU.pair_sum_sq(Y, "lscv", h, dtype=np.float32))
        row("LSCV_h grid, 150 h", n, d, seconds, pairs, lscv_ops(d, 150), torch_s, cpu_s,
            note=f"host rows to host sums; the public lscv_h_objective call (validation, covariance, whitening) {1e3 * public:.3f} ms")
        seconds = median_seconds(lambda X=X: bw.lscv_h(X, refine=False, backend="gpu"), args.repeat)
        first = first_call_seconds(lambda X=X: bw.lscv_h(X, refine=False, backend="gpu"))
        row("LSCV_h selection, the papers' grid (150 h, argmin)", n, d, seconds, pairs, lscv_ops(d, 150),
            note="the public call lscv_h(X, refine=False): validation, covariance, transfer, whitening on the GPU, "
            f"one pass of 150 h, argmin; a first call of this size {1e3 * first:.3f} ms")
        seconds = median_seconds(lambda X=X: bw.lscv_h(X, backend="gpu"), max(1, args.repeat // 3))
        first = first_call_seconds(lambda X=X: bw.lscv_h(X, backend="gpu"))
        resident = GPU.prepare_whitened_pair_sum_sq(Y, "lscv")  # as inside lscv_h: the rows stay on the GPU
        identity = np.eye(d)
        grid_s = median_seconds(lambda r=resident, h=h, eye=identity: r(eye, h), args.repeat)
        zoom_s = median_seconds(lambda r=resident, h=h, eye=identity: r(eye, h[:ZOOM]), args.repeat)
        passes = refinement_passes(h)
        row("LSCV_h selection (grid + refine)", n, d, seconds, pairs, lscv_ops(d, 150),
            note=f"sums on GPU-resident rows: grid {1e3 * grid_s:.3f} ms + {passes} refinement passes of {ZOOM} h at "
            f"{1e3 * zoom_s:.3f} ms; the rest is host work (validation, covariance, Python); a first call of this "
            f"size {1e3 * first:.3f} ms")
    # LSCV_H: one g(H), and a whole optimisation.
    for n in (64, 200) if quick else (1024, 16384):
        d = 16
        X = mixture(n, d)
        H = bw.normal_scale(X)
        pairs = n * (n - 1) / 2
        # inside LSCV_H's loop: data on the device, one whitening factor M per call
        Z = X - X.mean(axis=0)
        L = np.linalg.cholesky(H)
        in_loop = GPU.prepare_whitened_pair_sum_sq(Z, "lscv")
        # Nelder-Mead sends a new M each call: alternate two, so that every call re-whitens
        factors = itertools.cycle([L, 1.01 * L])
        seconds = median_seconds(lambda f=factors, in_loop=in_loop: in_loop(next(f), np.ones(1)), args.repeat)
        public = median_seconds(lambda X=X, H=H: bw.lscv_H_objective(X, H, backend="gpu"), args.repeat)
        Yt = on_device(np.linalg.solve(L, Z.T).T)  # PyTorch too starts from whitened rows on the GPU
        torch_s = _maybe(pairs, args.torch_max_pairs, lambda Yt=Yt: torch_lscv_sums(Yt, np.ones(1)))
        cpu_s = _maybe(pairs, args.cpu_max_pairs, lambda X=X, H=H: bw.lscv_H_objective(X, H, backend="cpu", dtype=np.float32))
        row("LSCV_H one g(H)", n, d, seconds, pairs, lscv_ops(d, 1), torch_s, cpu_s,
            note=f"as in the optimiser's loop; a standalone lscv_H_objective call (validation, host whitening, transfer) {1e3 * public:.3f} ms")
    for n, d in ((100, 2),) if quick else ((1024, 4), (16384, 4)):
        X = mixture(n, d)
        t0 = time.perf_counter()
        H = bw.lscv_H(X, backend="gpu")
        seconds = time.perf_counter() - t0
        pairs = n * (n - 1) / 2
        cpu_s = _maybe(pairs * 300, args.cpu_max_pairs, lambda X=X: bw.lscv_H(X, backend="cpu", dtype=np.float32), once=True)
        row("LSCV_H optimisation", n, d, seconds, pairs, lscv_ops(d, 1), None, cpu_s,
            note=f"one run (first call, kernels already compiled); diag H = {np.array2string(np.diag(H), precision=4)}")
    # KDE evaluation, n = m, d = 1.
    for n in (300,) if quick else (65536, 1 << 20):
        x = mixture(n, 1)[:, 0]
        q = np.linspace(x.min(), x.max(), n)
        kde = KDE(bandwidth=0.2, backend="gpu").fit(x)
        seconds = median_seconds(lambda kde=kde, q=q: kde.pdf(q), args.repeat)
        pairs = float(n) * n
        torch_s = _maybe(pairs, args.torch_max_pairs, lambda x=x, q=q: torch_kde(x[:, None], q[:, None], 0.2))
        cpu_kde = KDE(bandwidth=0.2, backend="cpu", dtype=np.float32).fit(x)
        cpu_s = _maybe(pairs, args.cpu_max_pairs, lambda cpu_kde=cpu_kde, q=q: cpu_kde.pdf(q))
        ref = torch_kde(x[:, None], q[:, None], 0.2) if pairs <= args.torch_max_pairs else None
        agree = "" if ref is None else f"max rel diff vs torch {np.max(np.abs(kde.pdf(q) - ref) / ref.max()):.1e}"
        row("KDE evaluation, m = n", n, 1, seconds, pairs, kde_ops(1), torch_s, cpu_s, note=agree)
    return rows, rates


def refinement_passes(grid: np.ndarray) -> int:
    """Passes of lscv_h's nested-grid refinement after ``grid``: each narrows two grid steps to
    ZOOM points, until they are ZOOM_TOL h0 apart (h0 = grid[0] * 4)."""
    spacing, tol, passes = grid[1] - grid[0], ZOOM_TOL * 4 * grid[0], 0
    while True:
        spacing, passes = 2 * spacing / (ZOOM - 1), passes + 1
        if spacing <= tol:
            return passes


def _maybe(pairs: float, budget: float, call, once: bool = False):
    """Seconds of ``call`` if its pairs fit the budget, else None (skipped, not extrapolated)."""
    if pairs > budget:
        return None
    if once:
        call()
        t0 = time.perf_counter()
        call()
        return time.perf_counter() - t0
    return median_seconds(call, 3)


def _format_row(r: dict) -> str:
    ratio = lambda v: "skipped" if v is None else f"{v:.1f}x"
    return (f"| {r['problem']} | {r['n']} | {r['d']} | {r['gpu_ms']:.3f} | {r['pairs_per_s']:.3e} | "
            f"{ratio(r['vs_torch'])} | {ratio(r['vs_cpu'])} | {r['fraction_of_limit']:.2f} | {r['note']} |")


HEADER = ("| problem | n | d | GPU ms | pairs/s | vs PyTorch | vs CPU backend | fraction of limit | note |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- |")


def sweep(quick: bool) -> None:
    """Tile, warp, group and scale-batch variants of each kernel at one size (a small table)."""
    n1, nd = (300, 100) if quick else (32768, 16384)
    x = mixture(n1, 1)[:, 0]
    Y = mixture(nd, 16)
    h = np.linspace(0.5, 3, 150)
    names = ("NUM_WARPS", "SINGLE_SCALE_WARPS", "HERMITE_WARPS")  # module constants; tiles are per backend
    saved = {name: getattr(gpu, name) for name in names}
    print("| kernel | tile | warps | groups | scales per pass | ms |\n| --- | --- | --- | --- | --- | --- |")

    def report(kernel, call, tile, warps, groups="-", batch="-"):
        print(f"| {kernel} | {tile} | {warps} | {groups} | {batch} | {1e3 * median_seconds(call, 3):.3f} |", flush=True)

    for tile in (32, 64):
        for warps in (4, 8):
            gpu.NUM_WARPS = gpu.HERMITE_WARPS = warps
            for groups in (16, 64):
                be = gpu.GpuBackend(gpu.GpuTiles(tile_1d=tile, query_block=tile, data_block=tile, groups_1d=groups))
                report("hermite d6", lambda be=be: be.pair_sum_1d(x, "gauss_d6", np.array([0.05])), tile, warps, groups)
            report("kde gaussian", lambda be=be: be.kernel_sum(x[:, None], x[:, None], "gaussian"), tile, warps)
    for tile in (32, 64, 128):
        for warps in (4, 8):
            gpu.NUM_WARPS = gpu.SINGLE_SCALE_WARPS = warps
            for groups in (16, 64):
                be = gpu.GpuBackend(gpu.GpuTiles(tile_sq=tile, groups_sq=groups))
                report("lscv 1 h", lambda be=be: be.pair_sum_sq(Y, "lscv", np.ones(1)), tile, warps, groups, 1)
                for batch in (2, 4, 8, 16):
                    if tile * tile * batch > 64 * 32 * warps:
                        continue  # two accumulators of more than 64 values per thread would spill
                    be = gpu.GpuBackend(gpu.GpuTiles(tile_sq=tile, groups_sq=groups, scales_per_pass=batch))
                    report("lscv 150 h", lambda be=be: be.pair_sum_sq(Y, "lscv", h), tile, warps, groups, batch)
    for name, value in saved.items():
        setattr(gpu, name, value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke test")
    parser.add_argument("--sweep", action="store_true", help="time tile/warp variants first")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cpu-max-pairs", type=float, default=2e10)
    parser.add_argument("--torch-max-pairs", type=float, default=2e11)
    args = parser.parse_args()
    if args.sweep:
        sweep(args.quick)
    print(HEADER, flush=True)
    rows, rates = run(args)
    device = torch.cuda.get_device_name() if gpu.DEVICE.type == "cuda" else "Triton interpreter (CPU)"
    meta = {"device": device, "host": platform.processor() or platform.machine(), "rates": rates,
            "torch": torch.__version__, "triton": triton.__version__, "cpu_threads": cpu.numba.get_num_threads()}
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "gpu_backend.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    table = "\n".join([f"Device: {device}; {meta['rates']}", "", HEADER, *map(_format_row, rows)])
    (args.output_dir / "gpu_backend.md").write_text(table + "\n")
    print("\n" + table)


if __name__ == "__main__":
    main()
