"""Exact plugin_H (cpu backend) against R's ``ks::Hpi(x, binned = FALSE)``, in one run.

Usage: python benchmarks/plugin_H.py [--n 10000] [--repeat 3] [--r-repeat 1] [--output-dir DIR]

Data: the first n rows of the bundled tempb (daily minimum and maximum temperatures, d = 2).
parzen: ``plugin_H(x, backend="cpu", method="exact")``, the best of ``--repeat`` calls after one warm-up (Numba's
compilation is cached on disk); ks: the best of ``--r-repeat`` calls of ``Hpi(x, binned = FALSE)``
(ks 1.14 defaults: SAMSE pilot, two stages), timed inside R.  Also the largest difference of the two
matrices, entry by entry relative to sqrt(H_ii H_jj).  Writes plugin_H.{json,md} into
benchmarks/results/.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from _common import machine, r_package_version, run_rscript, write_results  # benchmarks/_common.py

from parzen.bandwidth import plugin_H
from parzen.datasets import load

RESULTS = Path(__file__).parent / "results"

R_SCRIPT = """
suppressMessages(library(ks))
args <- commandArgs(trailingOnly = TRUE)
n <- as.integer(args[2]); repeats <- as.integer(args[3])
x <- matrix(readBin(args[1], what = "double", n = 2 * n, endian = "little"), ncol = 2, byrow = TRUE)
best <- Inf
for (i in seq_len(repeats)) {
  t0 <- proc.time()[["elapsed"]]
  H <- Hpi(x, binned = FALSE)
  best <- min(best, proc.time()[["elapsed"]] - t0)
}
cat(sprintf("%.17g", c(H, best)), "\\n")
"""


def run_ks(x: np.ndarray, repeat: int) -> tuple[np.ndarray, float] | str:
    values = run_rscript(R_SCRIPT, x, len(x), repeat)
    if isinstance(values, str):
        return values
    return np.array(values[:4]).reshape(2, 2), values[4]


def measure(n: int, repeat: int, r_repeat: int) -> dict:
    x = load("tempb").to_numpy()[:n]
    H = plugin_H(x, backend="cpu", method="exact")  # warm-up
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        H = plugin_H(x, backend="cpu", method="exact")
        best = min(best, time.perf_counter() - start)
    row: dict = {"n": n, "d": 2, "parzen_cpu_s": best, "H_parzen": H.tolist()}
    ks = run_ks(x, r_repeat)
    if isinstance(ks, str):
        row["ks_skipped"] = ks
        return row
    H_ks, seconds = ks
    scale = np.sqrt(np.outer(np.diag(H_ks), np.diag(H_ks)))
    row.update(ks_s=seconds, H_ks=H_ks.tolist(), max_rel_diff=float(np.abs((H - H_ks) / scale).max()), ks_over_parzen=seconds / best)
    return row


def markdown(row: dict, meta: dict) -> str:
    lines = [
        "# Exact plugin_H against ks::Hpi",
        "",
        (
            f"Machine: {meta['machine']}{meta['note']}. Data: the first {row['n']} rows of tempb (d = 2). parzen: "
            f"plugin_H(backend=\"cpu\"), best of {meta['repeat']} after a warm-up; ks {meta['ks']}: Hpi(x, binned = FALSE), "
            f"best of {meta['r_repeat']}, timed in R. max rel diff: max |H - H_ks| / sqrt(H_ks,ii H_ks,jj)."
        ),
        "",
        "| n | parzen cpu s | ks s | ks / parzen | max rel diff |",
        "| --- | --- | --- | --- | --- |",
    ]
    if "ks_s" in row:
        lines.append(f"| {row['n']} | {row['parzen_cpu_s']:.3f} | {row['ks_s']:.2f} | {row['ks_over_parzen']:.1f} | {row['max_rel_diff']:.1e} |")
    else:
        lines.append(f"| {row['n']} | {row['parzen_cpu_s']:.3f} | - ({row['ks_skipped']}) | - | - |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--r-repeat", type=int, default=1)
    parser.add_argument("--note", default="", help="appended to the machine line (e.g. that it was shared)")
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    row = measure(args.n, args.repeat, args.r_repeat)
    meta = {"machine": machine(), "note": args.note, "repeat": args.repeat, "r_repeat": args.r_repeat,
            "ks": r_package_version("ks")}
    write_results(args.output_dir, "plugin_H", {"meta": meta, "rows": [row]}, markdown(row, meta))
    print(markdown(row, meta))


if __name__ == "__main__":
    main()
