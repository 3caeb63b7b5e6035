"""Sweep of the tensor-core Gram-form KDE kernel (issue 20, item 5): blocks x warps x stages.

Usage (on a machine with a CUDA GPU):  python benchmarks/gpu_gram_tc_sweep.py [--dims 16,32]
       [--n 1048576] [--m 131072] [--variants 128-64-8-3,256-64-16-3-c-u] [--output FILE]

For each d it builds ``gpu_kde_multivariate.Problem`` (the fitted KDE's scaled data and queries,
float64 references over 2048 queries), times the former Gram kernel (``gaussian_gram_sum_kernel``
as the backend launches it) and then ``gaussian_gram_tc_sum_kernel`` for each (query block,
data block, warps, stages) on the float16 operands of :mod:`parzen.backends._gram_operands`, in
the same process (do_bench medians; a variant's "-c" takes the coarse column segments of
``layout(d, fine=False)``, "-u" leaves the weights out, as for equal weights), with the largest relative errors against the float64 sums of the
float64 data (``err``) and of the float32-rounded coordinates (``arith``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import torch
from gpu_kde_multivariate import Problem, bench

from parzen.backends import _gram_operands as operands
from parzen.backends import gpu

#: query block-data block-warps-stages
VARIANTS = "128-64-8-3,256-64-16-3"


def operands_of(problem: Problem, bq: int, bz: int) -> tuple:
    z = gpu._columns_at_zero(problem.Zs, bz, torch.float64, None)
    q = gpu._columns_at_zero(problem.Qs, bq, torch.float64, None)
    w = torch.zeros(z.shape[1], dtype=torch.float32, device=gpu.DEVICE)
    w[: problem.n] = 1.0
    grid = operands.grid_step(float(np.linalg.norm(problem.Zs, axis=1).max()) + gpu.QUERY_REACH)
    print(f"d={problem.d}: grid {grid}, omitted terms at most {operands.omitted_bound(problem.d, grid):.1e}", flush=True)
    return operands.data_operand(z, w > 0, grid), w, operands.query_operand(q, grid), operands.layout(problem.d)


def measure(problem: Problem, label: str, variant: str, call) -> dict:
    """Time ``call`` (do_bench median) and take its errors."""
    seconds = bench(call, False)
    values = call()[: problem.m]
    pairs = problem.n * problem.m
    row = {"d": problem.d, "kernel": label, "variant": variant, "seconds": seconds, "pairs_per_s": pairs / seconds,
           "err": problem.errors(values)[0], "arith": problem.arithmetic_error(values)}
    print(json.dumps(row), flush=True)
    return row


def sweep(problem: Problem, variants: list[tuple]) -> list[dict]:
    """The former kernel, then each (query block, data block, warps, stages)."""
    rows = [measure(problem, "former", " ".join(map(str, problem.variant())), lambda: problem.gram(problem.tiles))]
    for bq, bz, warps, stages, fine, weighted in variants:
        za, w, qa, layout = operands_of(problem, bq, bz)
        layout = operands.layout(problem.d, fine=fine)  # the same operands either way
        w = w if weighted else None
        launch = (bq, bz, warps, stages)
        label = f"{bq} {bz} {warps} {stages}" + ("" if fine else " coarse") + ("" if weighted else " unweighted")
        try:
            rows.append(measure(problem, "tensor cores", label,
                                lambda za=za, w=w, qa=qa, layout=layout, launch=launch: gpu._gaussian_gram_tc_chunk(za, w, qa, layout, launch)))
        except Exception as err:  # noqa: BLE001  (a launch that does not compile or fit is reported)
            print(f"{launch}: {type(err).__name__}: {err}"[:300], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", default="16,32")
    parser.add_argument("--n", type=int, default=1 << 20)
    parser.add_argument("--m", type=int, default=131072)
    parser.add_argument("--variants", default=VARIANTS)
    parser.add_argument("--output", type=Path, default=Path("gram_tc_sweep.json"))
    args = parser.parse_args()
    variants = []
    for spec in args.variants.split(","):  # bq-bz-warps-stages, then "c": the coarse layout, "u": no weights
        fields = spec.split("-")
        bq, bz, warps, stages = (int(v) for v in fields[:4])
        variants.append((bq, bz, warps, stages, "c" not in fields[4:], "u" not in fields[4:]))
    rows: list[dict] = []
    for d in (int(v) for v in args.dims.split(",")):
        rows += sweep(Problem(args.n, args.m, d, gpu.GpuTiles()), variants)
        device = "interpreter" if gpu.INTERPRETED else torch.cuda.get_device_name()
        args.output.write_text(json.dumps({"device": device, "rows": rows}, indent=1))
    print("| d | kernel | variant | ms | pairs/s | err | arith |\n|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['d']} | {r['kernel']} | {r['variant']} | {1e3 * r['seconds']:.2f} | {r['pairs_per_s']:.3e} | "
              f"{r['err']:.1e} | {r['arith']:.1e} |")


if __name__ == "__main__":
    main()
