"""Multivariate Gaussian KDE on the GPU in Gram form (issue 20, item 5 and its GPU targets).

Usage (on a machine with a CUDA GPU):  python benchmarks/gpu_kde_multivariate.py
       [--output-dir DIR] [--quick] [--sweep] [--peer-max-pairs 2e11]

For each (n, m, d) it fits ``KDE(backend="gpu")`` to a seeded normal mixture (float32, Scott's
bandwidth) and times, median of repeats after a warm-up (``triton.testing.do_bench`` for the
device-resident rows, wall clock with synchronisation for the end-to-end rows):

- ``tc``: the tensor-core Gram form (``gaussian_gram_tc_sum_kernel`` on the float16 operands of
  ``parzen.backends._gram_operands``), on operands already on the device as
  ``GpuBackend.kernel_sum`` makes them ("not taken" where the backend does not take it);
- ``gram``: the former Gram-form kernel (``gaussian_gram_sum_kernel``, float32 multiply-adds or
  tf32x3) on data and queries already on the device, scaled and padded as it takes them, norms
  included;
- ``direct``: the former kernel (``kernel_sum_kernel``, d differences per pair) on the same
  device tensors, in the same run;
- ``torch``: plain PyTorch on the same device tensors, chunked over queries:
  ``exp(-cdist(Q, Z)^2) @ w`` (cdist's own Gram path for these sizes, TF32 off);
- ``pdf``: the public ``kde.pdf(Q)`` from host rows to host densities (whitening, padding,
  transfers included), the fitted KDE's data already on the device (``prepare_kernel_sum``);
  ``pdf first``: its first call after ``fit``, which also prepares and sends the data.

Accuracy: each result's largest relative error, over 2048 of the queries, against a float64
reference computed on the device by the difference form (no cancellation), and the norm-wise
error.  ``--sweep`` first times block / warp / precision variants of the Gram kernel at the
largest size.  ``--quick`` runs tiny sizes (a smoke test, also under TRITON_INTERPRET=1).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from parzen import KDE
from parzen.backends import gpu

RESULTS = Path(__file__).parent / "results"
CHECKED_QUERIES = 2048
#: Sums below this (in units of the largest term, 1) are left out of the relative errors: their
#: terms are near float32's smallest normal number (1.2e-38), where flush-to-zero drops them.
SMALLEST_SUM = 1e-30


def mixture(n: int, d: int, seed: int) -> np.ndarray:
    """A seeded two-component normal mixture with correlated coordinates."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d)) / np.sqrt(d) + np.eye(d)
    X = rng.normal(size=(n, d)) @ A.T
    X[: n // 3] += 3.0
    return X


def bench(call, quick: bool) -> float:
    """Median seconds of ``call()`` (device events; warm-up first)."""
    if gpu.INTERPRETED:
        t0 = time.perf_counter()
        call()
        return time.perf_counter() - t0
    import triton.testing

    return triton.testing.do_bench(call, warmup=25 if quick else 100, rep=50 if quick else 400, return_mode="median") / 1e3


def wall(call, repeat: int, *, warm: bool = True) -> float:
    """Median wall seconds of ``call()`` (after a warm-up call when ``warm``), synchronised."""
    if warm:
        call()
    times = []
    for _ in range(repeat):
        if not gpu.INTERPRETED:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        call()
        if not gpu.INTERPRETED:
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


class Problem:
    """One (n, m, d): the fitted KDE's scaled data and queries on the device, as kernel_sum sends them."""

    def __init__(self, n: int, m: int, d: int, tiles: gpu.GpuTiles) -> None:
        self.n, self.m, self.d = n, m, d
        X = mixture(n, d, seed=d)
        self.Q_host = mixture(m, d, seed=d + 1000)
        self.kde = KDE(backend="gpu").fit(X)
        Z = self.kde._Z  # whitened by the bandwidth matrix (KDE's own transform)
        Qz = self.kde._transform(self.Q_host)
        centre = Z.mean(axis=0)
        scale = math.sqrt(0.5 / math.log(2.0))
        self.Zs, self.Qs = (Z - centre) * scale, (Qz - centre) * scale  # kernel 2^-|q - z|^2
        self.tiles = tiles
        #: (precision, warps, stages) of the Gram launch; None: the backend's default for d
        self.launch: tuple | None = None
        self.load(tiles)
        self.reference = self._float64_reference(self.Zs, self.Qs)
        #: the same sums of the float32-rounded coordinates: the error of the arithmetic alone
        self.rounded_reference = self._float64_reference(*(a.astype(np.float32).astype(np.float64) for a in (self.Zs, self.Qs)))

    def load(self, tiles: gpu.GpuTiles) -> None:
        dims = gpu._gram_dims(self.d)
        self.z = gpu._padded(self.Zs, tiles.gram_data_block, 0.0, 0.0, torch.float32, dims)
        self.z_norms = gpu._squared_norms(self.z)
        self.q = gpu._padded(self.Qs, tiles.gram_query_block, 0.0, 0.0, torch.float32, dims)
        w = np.zeros(self.z.shape[1])
        w[: self.n] = 1.0
        self.w = gpu._to_device(w, torch.float32)
        self.z_direct = gpu._padded(self.Zs, tiles.data_block, 0.0, 0.0, torch.float32)
        self.q_direct = gpu._padded(self.Qs, tiles.query_block, 0.0, 0.0, torch.float32)
        wd = np.zeros(self.z_direct.shape[1])
        wd[: self.n] = 1.0
        self.w_direct = gpu._to_device(wd, torch.float32)
        self.zt = torch.from_numpy(self.Zs).to(gpu.DEVICE, torch.float32)
        self.qt = torch.from_numpy(self.Qs).to(gpu.DEVICE, torch.float32)

    def _float64_reference(self, Zs: np.ndarray, Qs: np.ndarray) -> np.ndarray:
        """sum_i 2^-|q - z_i|^2 for the checked queries, float64 differences on the device."""
        z = torch.from_numpy(Zs).to(gpu.DEVICE)
        checked = Qs[: CHECKED_QUERIES]
        out = np.empty(len(checked))
        rows = max(1, (1 << 24) // (self.n * self.d))
        for start in range(0, len(checked), rows):
            q = torch.from_numpy(checked[start : start + rows]).to(gpu.DEVICE)
            s = ((q[:, None, :] - z[None, :, :]) ** 2).sum(dim=2)
            out[start : start + rows] = torch.exp2(-s).sum(dim=1).cpu().numpy()
        return out

    def gram(self, tiles: gpu.GpuTiles) -> torch.Tensor:
        return gpu._gaussian_gram_chunk(self.z, self.z_norms, self.w, self.q, tiles, self.launch)[: self.m]

    def tensor_core_operands(self) -> tuple | None:
        """(data operand, query operand, layout, launch) of the tensor-core Gram form as
        ``GpuBackend.kernel_sum`` makes them, or None where it does not take that form."""
        sums = gpu._DeviceKernelSum(self.kde._Z, "gaussian", None, torch.float32, self.tiles, resident=True)
        if sums.layout is None:
            return None
        data, _, weights = next(iter(sums.device_chunks()))
        return data, weights, sums.queries(self.kde._transform(self.Q_host)), sums.layout, sums.launch

    def tensor_cores(self, operands: tuple) -> torch.Tensor:
        return gpu._gaussian_gram_tc_chunk(*operands)[: self.m]

    def variant(self) -> list:
        """(precision, query block, data block, warps, stages) of the Gram launch in use."""
        dims = gpu._gram_dims(self.d)
        precision, warps, stages = self.launch or gpu.GRAM_LAUNCH.get(dims, gpu.GRAM_WIDE_LAUNCH)
        return [precision, self.tiles.gram_query_block, self.tiles.gram_data_block, warps, stages]

    def direct(self) -> torch.Tensor:
        tiles = self.tiles
        d, n_padded = self.z_direct.shape
        m_padded = self.q_direct.shape[1]
        query_blocks, data_blocks = m_padded // tiles.query_block, n_padded // tiles.data_block
        data_chunks = max(1, min(data_blocks, -(-8 * gpu._multiprocessors() // query_blocks)))
        chunk_blocks = -(-data_blocks // data_chunks)
        data_chunks = -(-data_blocks // chunk_blocks)
        partial = torch.empty((data_chunks, m_padded), dtype=torch.float64, device=gpu.DEVICE)
        gpu.kernels.kernel_sum_kernel[(query_blocks, data_chunks)](
            self.z_direct, self.q_direct, self.w_direct, n_padded, m_padded, chunk_blocks, partial,
            DIM=d, KIND=0, BLOCK_Q=tiles.query_block, BLOCK_Z=tiles.data_block, FAST=gpu._fast(torch.float32),
            num_warps=gpu.NUM_WARPS,
        )
        return partial.sum(dim=0)[: self.m]

    def torch_peer(self) -> torch.Tensor:
        """exp(-cdist^2 ln 2) @ 1 over query chunks: the plain PyTorch way (float32)."""
        out = torch.empty(self.m, dtype=torch.float64, device=gpu.DEVICE)
        ones = torch.ones(self.n, 1, dtype=torch.float32, device=gpu.DEVICE)
        rows = max(1, (1 << 28) // self.n)
        for start in range(0, self.m, rows):
            s = torch.cdist(self.qt[start : start + rows], self.zt).square_()
            out[start : start + rows] = (torch.exp2(-s) @ ones)[:, 0]
        return out

    def arithmetic_error(self, values) -> float:
        """Largest relative error against the float64 sums of the float32-rounded coordinates."""
        got = (values.cpu().numpy() if isinstance(values, torch.Tensor) else np.asarray(values))[: len(self.reference)]
        ref = self.rounded_reference
        held = ref >= SMALLEST_SUM
        return float(np.max(np.abs(got[held] - ref[held]) / ref[held])) if held.any() else float("nan")

    def errors(self, values) -> tuple[float, float]:
        """(largest relative error over the checked queries whose sum float32 holds, norm-wise error).

        Queries whose float64 sum is below :data:`SMALLEST_SUM` (far from all data, where float32
        terms underflow; counted in ``underflowed``) are left out of the largest relative error.
        """
        got = (values.cpu().numpy() if isinstance(values, torch.Tensor) else np.asarray(values))[: len(self.reference)]
        ref = self.reference
        held = ref >= SMALLEST_SUM
        worst = float(np.max(np.abs(got[held] - ref[held]) / ref[held])) if held.any() else float("nan")
        return worst, float(np.linalg.norm(got - ref) / np.linalg.norm(ref))

    def log_error(self, logs: np.ndarray) -> float:
        """Largest absolute error of log densities (the relative error of the densities) over the
        checked queries whose float64 sum is at least :data:`SMALLEST_SUM`, after removing the
        constant log of the normalisation (the median difference)."""
        held = self.reference >= SMALLEST_SUM
        if not held.any():  # every checked sum underflowed (d = 64 at n = 32768)
            return float("nan")
        difference = np.asarray(logs)[: len(self.reference)][held] - np.log(self.reference[held])
        return float(np.max(np.abs(difference - np.median(difference))))

    @property
    def underflowed(self) -> int:
        return int(np.sum(self.reference < SMALLEST_SUM))

    def pdf_errors(self) -> tuple[float, float]:
        got = self.kde.pdf(self.Q_host[: CHECKED_QUERIES])
        norm = got.sum() / self.reference.sum()  # kde.pdf divides the sums by n |H|^(1/2) (2 pi)^(d/2)
        return self.errors(got / norm)


#: Swept variants of the Gram kernel: (precision, block_q, block_z, warps, stages).  A first
#: sweep (H100, d = 16) of blocks 64/128 x 64/128 and 4/8 warps put "ieee" 128 x 64 with 4 warps
#: first (129 ms) and "tf32x3" 128 x 64 with 8 warps best of its kind (139 ms).
VARIANTS = [
    ("ieee", 128, 64, 4, 2), ("ieee", 128, 64, 4, 3), ("ieee", 128, 64, 4, 4), ("ieee", 128, 128, 8, 3),
    ("tf32x3", 128, 64, 8, 2), ("tf32x3", 128, 64, 8, 3), ("tf32x3", 128, 64, 8, 4), ("tf32x3", 128, 128, 4, 3),
    ("tf32x3", 128, 128, 8, 2), ("tf32x3", 256, 64, 8, 3), ("tf32x3", 128, 64, 4, 3),
    ("tf32", 128, 64, 8, 3),  # one TF32 product: the speed of the tensor-core path, not accurate enough
]
QUICK_VARIANTS = [("ieee", 16, 16, 4, 2), ("tf32x3", 16, 16, 4, 2)]


def apply(variant: tuple, problem: Problem) -> gpu.GpuTiles:
    """Launch ``problem``'s Gram sums as ``variant``; its tiles (the data are reloaded to them)."""
    precision, bq, bz, warps, stages = variant
    problem.launch = (precision, warps, stages)
    tiles = replace(problem.tiles, gram_query_block=bq, gram_data_block=bz)
    problem.load(tiles)
    return tiles


def sweep(problem: Problem, quick: bool) -> list[dict]:
    rows = []
    for variant in QUICK_VARIANTS if quick else VARIANTS:
        tiles = apply(variant, problem)
        precision, bq, bz, warps, stages = variant
        try:
            seconds = bench(lambda tiles=tiles: problem.gram(tiles), quick)
            values = problem.gram(tiles)
        except Exception as err:  # noqa: BLE001  (a variant that does not compile is reported, not fatal)
            print(f"{variant}: {type(err).__name__}: {err}"[:300], flush=True)
            continue
        worst, normwise = problem.errors(values)
        pairs = problem.n * problem.m
        row = {"d": problem.d, "precision": precision, "block_q": bq, "block_z": bz, "warps": warps, "stages": stages,
               "seconds": seconds, "pairs_per_s": pairs / seconds, "max_rel_err": worst, "normwise_rel_err": normwise,
               "arithmetic_rel_err": problem.arithmetic_error(values)}
        rows.append(row)
        print(f"sweep d={problem.d} {precision:6s} {bq:3d}x{bz:3d} {warps} warps {stages} stages: {1e3 * seconds:8.3f} ms "
              f"{pairs / seconds:.3e} pairs/s max rel err {worst:.2e} arithmetic {row['arithmetic_rel_err']:.2e}", flush=True)
    problem.launch = None
    problem.load(problem.tiles)
    return rows


def measure(problem: Problem, args) -> dict:
    pairs = problem.n * problem.m
    tiles = problem.tiles
    row: dict = {"n": problem.n, "m": problem.m, "d": problem.d, "pairs": pairs, "underflowed_queries": problem.underflowed}
    operands = problem.tensor_core_operands()
    row["tc_s"] = bench(lambda: problem.tensor_cores(operands), args.quick) if operands else None
    if operands:
        row["tc_variant"] = list(operands[4])
        values = problem.tensor_cores(operands)
        row["tc_max_rel_err"], row["tc_normwise_rel_err"] = problem.errors(values)
        row["tc_arithmetic_rel_err"] = problem.arithmetic_error(values)
    row["gram_s"] = bench(lambda: problem.gram(tiles), args.quick)
    row["variant"] = problem.variant()
    values = problem.gram(tiles)
    row["gram_max_rel_err"], row["gram_normwise_rel_err"] = problem.errors(values)
    row["gram_arithmetic_rel_err"] = problem.arithmetic_error(values)
    row["direct_s"] = bench(problem.direct, args.quick) if pairs * problem.d <= args.direct_max_work else None
    if row["direct_s"] is not None:
        values = problem.direct()
        row["direct_max_rel_err"], _ = problem.errors(values)
        row["direct_arithmetic_rel_err"] = problem.arithmetic_error(values)
    if pairs <= args.peer_max_pairs:
        torch.backends.cuda.matmul.allow_tf32 = False
        row["torch_s"] = bench(problem.torch_peer, args.quick)
        values = problem.torch_peer()
        row["torch_max_rel_err"], _ = problem.errors(values)
        row["torch_arithmetic_rel_err"] = problem.arithmetic_error(values)
    else:
        row["torch_s"] = None
    queries = problem.Q_host
    row["pdf_first_s"] = wall(lambda: problem.kde.pdf(queries), 1, warm=False)  # prepares the data on the device
    row["pdf_s"] = wall(lambda: problem.kde.pdf(queries), 3 if not args.quick else 1)
    row["pdf_max_rel_err"], _ = problem.pdf_errors()
    row["log_s"] = wall(lambda: problem.kde.score_samples(queries), 3 if not args.quick else 1)
    row["log_max_abs_err"] = problem.log_error(problem.kde.score_samples(queries[:CHECKED_QUERIES]))
    if pairs * problem.d <= args.direct_max_work:  # the direct log-sum kernel (the Gram form's threshold out of reach)
        direct = gpu.GpuBackend(replace(tiles, gram_min_dim=1 << 30, tc_min_dim=1 << 30))
        kde = problem.kde
        row["log_direct_s"] = wall(lambda: direct.log_kernel_sum(kde._Z, kde._transform(queries), "gaussian", kde.weights_), 1)
        logs = kde._log_norm + direct.log_kernel_sum(kde._Z, kde._transform(queries[:CHECKED_QUERIES]), "gaussian", kde.weights_)
        row["log_direct_max_abs_err"] = problem.log_error(logs)
    for key in ("tc", "gram", "direct", "torch"):
        if row.get(f"{key}_s"):
            row[f"{key}_pairs_per_s"] = pairs / row[f"{key}_s"]
    row["pdf_pairs_per_s"] = pairs / row["pdf_s"]
    return row


def _ms(value) -> str:
    return "skipped" if value is None else f"{1e3 * value:.3f}"


def _err(row: dict, key: str) -> str:
    value = row.get(key)
    return "" if value is None else f"{value:.1e}"


def markdown(rows: list[dict], sweep_rows: list[dict], meta: dict) -> str:
    lines = [
        "# Multivariate Gaussian KDE on the GPU, Gram form (issue 20, item 5)", "",
        (f"Device: {meta['device']}; torch {meta['torch']}, triton {meta['triton']}. "
         f"Command: `{meta['command']}`."), "",
        ("Times are medians (ms) of device-resident runs (do_bench) except `pdf` (host rows to host "
         "densities, wall clock, median of 3 calls of a fitted KDE, whose data stay on the device between calls) "
         "and `pdf first` (the first call after fit, which also centres, pads and sends the data), `log` "
         "(`score_samples`, wall clock, median of 3 calls: the tensor-core log-sum-exp kernel from d = 2, the data kept on "
         "the device as for `pdf`) and `log direct` (the same sums by the direct log-sum kernel, the former path for every "
         "d, through `log_kernel_sum`, which sends the data at each call).  Errors are the largest relative error over "
         f"{CHECKED_QUERIES} queries: `err` against the float64 sums of the float64 data (float32's "
         "rounding of the coordinates included), `arith` against the float64 sums of the float32-rounded "
         "coordinates (the kernel's arithmetic alone); for `log`, the largest absolute error of the log density "
         "(= relative error of the density) against the float64 data's.  `tc`: the tensor-core Gram form on float16 "
         "operands (the backend's float32 path where it is taken, from d = 2); `gram`: the former Gram kernel, its `variant`: "
         "dot precision, query x data block, warps, pipeline stages; `direct`: the direct kernel (the former float32 path "
         "below d = 6)."), "",
        ("| n | m | d | tc ms | tc pairs/s | tc err | tc arith | variant | gram ms | gram pairs/s | gram err | gram arith "
         "| direct ms | direct err | direct arith | torch ms | torch err | torch arith | pdf first ms | pdf ms (end to end) "
         "| pdf err | log ms | log err | log direct ms | log direct err |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        variant = " ".join(str(v) for v in r["variant"])
        tc = (f"{_ms(r['tc_s'])} | {r['tc_pairs_per_s']:.3e} | {_err(r, 'tc_max_rel_err')} | {_err(r, 'tc_arithmetic_rel_err')}"
              if r.get("tc_s") else "not taken | | | ")
        lines.append(
            f"| {r['n']} | {r['m']} | {r['d']} | {tc} | {variant} | {_ms(r['gram_s'])} | {r['gram_pairs_per_s']:.3e} | "
            f"{_err(r, 'gram_max_rel_err')} | {_err(r, 'gram_arithmetic_rel_err')} | {_ms(r['direct_s'])} | "
            f"{_err(r, 'direct_max_rel_err')} | {_err(r, 'direct_arithmetic_rel_err')} | {_ms(r['torch_s'])} | "
            f"{_err(r, 'torch_max_rel_err')} | {_err(r, 'torch_arithmetic_rel_err')} | {_ms(r['pdf_first_s'])} | {_ms(r['pdf_s'])} | "
            f"{_err(r, 'pdf_max_rel_err')} | {_ms(r['log_s'])} | {_err(r, 'log_max_abs_err')} | {_ms(r.get('log_direct_s'))} | "
            f"{_err(r, 'log_direct_max_abs_err')} |"
        )
    if sweep_rows:
        lines += ["", "Sweep of the Gram kernel (n = 2^20, m = 131072):", "",
                  "| d | precision | block q x z | warps | stages | ms | pairs/s | err | arith | norm-wise err |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for s in sweep_rows:
            lines.append(f"| {s['d']} | {s['precision']} | {s['block_q']} x {s['block_z']} | {s['warps']} | {s['stages']} | "
                         f"{_ms(s['seconds'])} | {s['pairs_per_s']:.3e} | {s['max_rel_err']:.1e} | "
                         f"{s['arithmetic_rel_err']:.1e} | {s['normwise_rel_err']:.1e} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    parser.add_argument("--name", default="gpu_kde_multivariate")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sweep", action="store_true")
    parser.add_argument("--dims", default="2,4,8,16,32")
    parser.add_argument("--peer-max-pairs", type=float, default=2e11)
    parser.add_argument("--direct-max-work", type=float, default=2.3e12, help="pairs x d above which the direct kernel is skipped")
    parser.add_argument("--sweep-dims", default="16,32")
    args = parser.parse_args()
    tiles = gpu.GpuTiles()
    if args.quick:
        sizes = [(256, 64, 16), (128, 32, 3)]
    else:
        dims = [int(v) for v in args.dims.split(",")]
        sizes = [(1 << 20, 131072, 16), (32768, 32768, 16)] + [(1 << 20, 131072, d) for d in dims if d != 16]
        sizes += [(32768, 32768, d) for d in dims if d not in (16,)]
    sweep_rows: list[dict] = []
    rows = []
    swept = {int(v) for v in args.sweep_dims.split(",")} if args.sweep else set()
    for n, m, d in sizes:
        problem = Problem(n, m, d, tiles)
        if d in swept and n == sizes[0][0]:
            sweep_rows += sweep(problem, args.quick)
            swept.discard(d)
        row = measure(problem, args)
        rows.append(row)
        args.output_dir.mkdir(parents=True, exist_ok=True)  # kept row by row, should a later size fail
        (args.output_dir / f"{args.name}.json").write_text(json.dumps({"rows": rows}, indent=1))
        print(f"n={n} m={m} d={d}: tensor cores {_ms(row['tc_s'])} ms, gram {_ms(row['gram_s'])} ms ({row['gram_pairs_per_s']:.3e} pairs/s, max rel err "
              f"{row['gram_max_rel_err']:.1e}), direct {_ms(row['direct_s'])} ms, torch {_ms(row['torch_s'])} ms, "
              f"pdf {_ms(row['pdf_s'])} ms (max rel err {row['pdf_max_rel_err']:.1e})", flush=True)
        del problem
    import triton

    meta = {"device": torch.cuda.get_device_name() if not gpu.INTERPRETED else "TRITON_INTERPRET=1 (CPU)",
            "torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
            "command": "python benchmarks/gpu_kde_multivariate.py " + " ".join(sys.argv[1:])}
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / f"{args.name}.json").write_text(json.dumps({"meta": meta, "rows": rows, "sweep": sweep_rows}, indent=1))
    (args.output_dir / f"{args.name}.md").write_text(markdown(rows, sweep_rows, meta))
    print(markdown(rows, sweep_rows, meta))


if __name__ == "__main__":
    main()
