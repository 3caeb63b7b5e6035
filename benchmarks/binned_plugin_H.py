"""Binned plugin_H against exact plugin_H and R's ``ks::Hpi(x, binned = TRUE)``, in one run.

Usage: python benchmarks/binned_plugin_H.py [--sizes 10000 100000 1000000] [--dims 2 3 4]
       [--ks-dims 2 3] [--tolerance 1e-3] [--exact-up-to 10000] [--exact-from FILE] [--repeat 3]
       [--note TEXT] [--output-dir DIR]

Data: a two-component normal mixture (seed 20), n rows in d = 2 or 3 columns.  parzen:
binned ``plugin_H(x, method="auto", tolerance=...)`` with "auto"'s exact sizes set aside (the grid
chosen for that relative error on H; where it exceeds the node cap, "auto" bins on the cap with a
warning, said in the row), best of ``--repeat`` after a warm-up; exact: ``plugin_H(x,
method="exact", backend="cpu")``, once, for n <= ``--exact-up-to``, and beyond from ``--exact-from``
(benchmarks/exact_matrix_references.py's JSON, the GPU backend's exact H: float64 where there, else
float32); ks: ``Hpi(x, binned = TRUE)`` (ks's defaults: grid 151^2 / 51^3, SAMSE / scalar pilot),
once, timed inside R, for d in ``--ks-dims``.  Relative differences are Frobenius norms
||H - H_ref|| / ||H_ref||; on a capped grid the error estimate the warning states is recorded.
Writes binned_plugin_H.{json,md} into benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path
from unittest import mock

import numpy as np
from _common import machine, r_package_version, run_rscript, write_results  # benchmarks/_common.py

from parzen.bandwidth import binned_matrix, plugin_H
from parzen.bandwidth.method import recording

RESULTS = Path(__file__).parent / "results"

R_SCRIPT = """
suppressMessages(library(ks))
args <- commandArgs(trailingOnly = TRUE)
n <- as.integer(args[2]); d <- as.integer(args[3])
x <- matrix(readBin(args[1], what = "double", n = d * n, endian = "little"), ncol = d, byrow = TRUE)
t0 <- proc.time()[["elapsed"]]
H <- Hpi(x, binned = TRUE)
cat(sprintf("%.17g", c(H, proc.time()[["elapsed"]] - t0)), "\\n")
"""


def mixture(n: int, d: int) -> np.ndarray:
    rng = np.random.default_rng(20)
    first = rng.normal(size=(n - n // 3, d))
    second = rng.normal(size=(n // 3, d)) * 0.5 + 2.0
    return np.r_[first, second] @ (np.eye(d) + 0.3 * np.tri(d, d, -1))


def run_ks(x: np.ndarray) -> tuple[np.ndarray, float] | str:
    n, d = x.shape
    values = run_rscript(R_SCRIPT, x, n, d)
    if isinstance(values, str):
        return values
    return np.array(values[: d * d]).reshape(d, d), values[d * d]


def relative(A, B) -> float:
    return float(np.linalg.norm(np.asarray(A) - np.asarray(B)) / np.linalg.norm(np.asarray(B)))


def binned(x: np.ndarray, tolerance: float) -> tuple[np.ndarray, dict]:
    """Binned plugin_H: method="auto" with its exact sizes set aside, so that it bins (and, where the
    tolerance's grid exceeds the node cap, bins on the cap with a warning instead of raising)."""
    with warnings.catch_warnings(record=True) as caught, recording() as records, \
            mock.patch.dict(binned_matrix.AUTO_BINNED_FROM, {x.shape[1]: 0}):
        warnings.simplefilter("always")
        H = np.asarray(plugin_H(x, method="auto", tolerance=tolerance))
    estimate = records[-1].error_estimate
    info = {"grid": list(records[-1].grid_size or ()), "capped": estimate is not None, "error_estimate": estimate,
            "warned": any("allowed" in str(w.message) for w in caught)}
    return H, info


def stored_exact(path: Path | None) -> dict:
    """(n, d) -> (H, source) of plugin_H from exact_matrix_references.py's JSON (float64 preferred)."""
    if path is None or not path.exists():
        return {}
    stored = json.loads(path.read_text())
    out: dict = {}
    for row in sorted(stored["rows"], key=lambda r: r["dtype"] == "float64"):  # float64 last: it wins
        if row["selector"] == "plugin_H":
            out[(row["n"], row["d"])] = (row["H"], f"{stored['device']} {row['dtype']}")
    return out


def measure(n: int, d: int, tolerance: float, exact_up_to: int, repeat: int, stored: dict, with_ks: bool) -> dict:
    x = mixture(n, d)
    binned(x[: min(n, 5000)], tolerance)  # warm-up (Numba)
    best, H = float("inf"), None
    for _ in range(repeat if n < 1_000_000 else 1):
        start = time.perf_counter()
        H, info = binned(x, tolerance)
        best = min(best, time.perf_counter() - start)
    row: dict = {"n": n, "d": d, "binned_s": best, **info, "H_binned": H.tolist()}
    if n <= exact_up_to:
        start = time.perf_counter()
        H_exact = np.asarray(plugin_H(x, method="exact", backend="cpu"))
        seconds = time.perf_counter() - start
        row.update(exact_s=seconds, H_exact=H_exact.tolist(), rel_diff_exact=relative(H, H_exact), exact_over_binned=seconds / best)
    elif (n, d) in stored:
        H_exact, source = stored[(n, d)]
        row.update(H_exact=H_exact, exact_source=source, rel_diff_exact=relative(H, H_exact))
    if not with_ks:
        return row
    ks = run_ks(x)
    if isinstance(ks, str):
        row["ks_skipped"] = ks
    else:
        H_ks, seconds = ks
        row.update(ks_s=seconds, H_ks=H_ks.tolist(), ks_over_binned=seconds / best, rel_diff_ks=relative(H, H_ks))
        if "H_exact" in row:
            row["rel_diff_ks_exact"] = relative(H_ks, row["H_exact"])
    return row


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [
        "# Binned plugin_H against exact plugin_H and ks::Hpi(binned = TRUE)",
        "",
        (f"Machine: {meta['machine']}{meta['note']}. Data: a two-component normal mixture (seed 20). parzen: "
         f"plugin_H binned (method=\"auto\", its exact sizes set aside; tolerance={meta['tolerance']:g}), best of "
         f"{meta['repeat']} after a warm-up (1 at n = 10^6); exact: plugin_H(method=\"exact\", backend=\"cpu\"), once; "
         f"ks {meta['ks']}: Hpi(x, binned = TRUE), once, timed in R. Differences: ||H - H_ref||_F / ||H_ref||_F. "
         "A grid marked capped hit the node cap: the tolerance's grid was larger, and the warning states the "
         "error estimate given (estimate; recorded as MethodUsed.error_estimate). Exact values marked * come from "
         f"benchmarks/exact_matrix_references.py on the GPU backend ({meta['exact_from']})."),
        "",
        "| n | d | grid | binned s | exact s | exact / binned | ks s | ks / binned | binned vs exact | estimate | binned vs ks | ks vs exact |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]

    def cell(row: dict, key: str, form: str) -> str:
        return format(row[key], form) if key in row else "-"

    for row in rows:
        grid = " x ".join(map(str, row["grid"])) + (" (capped)" if row["capped"] else "")
        lines.append(
            f"| {row['n']} | {row['d']} | {grid} | {row['binned_s']:.2f} | {cell(row, 'exact_s', '.2f')} | "
            f"{cell(row, 'exact_over_binned', '.1f')} | {cell(row, 'ks_s', '.2f')} | {cell(row, 'ks_over_binned', '.2f')} | "
            f"{cell(row, 'rel_diff_exact', '.1e')}{'*' if 'exact_source' in row else ''} | "
            f"{format(row['error_estimate'], '.1e') if row.get('error_estimate') is not None else '-'} | "
            f"{cell(row, 'rel_diff_ks', '.1e')} | {cell(row, 'rel_diff_ks_exact', '.1e')} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--dims", type=int, nargs="+", default=[2, 3, 4])
    parser.add_argument("--ks-dims", type=int, nargs="+", default=[2, 3],
                        help="dimensions ks runs for (d = 4: quakes' 1000 rows took ks over 7 minutes)")
    parser.add_argument("--exact-from", type=Path, default=RESULTS / "binned_plugin_H_exact.json")
    parser.add_argument("--tolerance", type=float, default=1e-3)
    parser.add_argument("--exact-up-to", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--note", default="", help="appended to the machine line (e.g. that it was shared)")
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    rows = []
    stored = stored_exact(args.exact_from)
    for d in args.dims:
        for n in args.sizes:
            rows.append(measure(n, d, args.tolerance, args.exact_up_to, args.repeat, stored, d in args.ks_dims))
            print(rows[-1]["n"], rows[-1]["d"], rows[-1]["binned_s"], rows[-1].get("ks_s"), flush=True)
    meta = {"machine": machine(), "note": args.note, "tolerance": args.tolerance, "repeat": args.repeat,
            "ks": r_package_version("ks"), "exact_from": str(args.exact_from.name)}
    write_results(args.output_dir, "binned_plugin_H", {"meta": meta, "rows": rows}, markdown(rows, meta))
    print(markdown(rows, meta))


if __name__ == "__main__":
    main()
