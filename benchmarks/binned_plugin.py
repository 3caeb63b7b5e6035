"""Binned PLUGIN against the exact one, KDEpy's ISJ and R's ``KernSmooth::dpik``, in one run.

Usage: python benchmarks/binned_plugin.py [--sizes 16384,1000000,10000000,100000000]
       [--tolerance 1e-4] [--repeat 5] [--exact-max-n 16384] [--output-dir DIR]

Data: a bimodal sample (half N(-2, 0.5^2), half N(2, 0.5^2)), seed 0.  parzen's PLUGIN runs with
scale="sd"; ``dpik`` with ``scalest="stdev"`` (the same scale, its 401-point grid).  Times are the
best of ``--repeat`` calls (one call above 10^7 points), in milliseconds, on the machine named in
the output (``dpik``: the best of ``--repeat`` timings of a loop of max(1, 2 10^7 / n) calls, per
call, as R's clock ticks in milliseconds).  The exact PLUGIN (cpu backend) runs only up to ``--exact-max-n``; its h is the
reference of the relative differences.  Writes binned_plugin.{json,md} into benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import machine  # benchmarks/_common.py (the scripts run from benchmarks/)

from parzen.bandwidth import plugin_stages
from parzen.binned.grid import GridSpec, linear_bin

RESULTS = Path(__file__).parent / "results"

R_SCRIPT = """
library(KernSmooth)
args <- commandArgs(trailingOnly = TRUE)
n <- as.integer(args[2]); repeats <- as.integer(args[3])
x <- readBin(args[1], what = "double", n = n, endian = "little")
h <- dpik(x, scalest = "stdev")
inner <- max(1L, 20000000L %/% n)  # calls per timing: proc.time() ticks in ms
best <- Inf
for (i in seq_len(repeats)) {
  t0 <- proc.time()[["elapsed"]]
  for (j in seq_len(inner)) h <- dpik(x, scalest = "stdev")
  best <- min(best, (proc.time()[["elapsed"]] - t0) / inner)
}
cat(sprintf("%.17g %.17g\\n", h, best * 1000))
"""


def best_time(call, repeat: int) -> tuple[float, object]:
    result = call()  # warm-up (imports, FFT plans) and the value
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best * 1e3, result


def bimodal(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    x = np.empty(n)
    x[: n // 2] = rng.normal(-2.0, 0.5, n // 2)
    x[n // 2 :] = rng.normal(2.0, 0.5, n - n // 2)
    return x


def run_dpik(x: np.ndarray, repeat: int) -> tuple[float, float] | str:
    if shutil.which("Rscript") is None:
        return "Rscript not found"
    with tempfile.TemporaryDirectory() as tmp:
        data, script = Path(tmp) / "x.bin", Path(tmp) / "dpik.R"
        x.astype("<f8").tofile(data)
        script.write_text(R_SCRIPT)
        done = subprocess.run(
            ["Rscript", str(script), str(data), str(x.size), str(repeat)],
            capture_output=True,
            text=True,
            check=False,
        )
    if done.returncode != 0:
        return f"Rscript failed: {done.stderr.strip()[-200:]}"
    h, ms = map(float, done.stdout.split()[-2:])
    return h, ms


def run_isj(x: np.ndarray, repeat: int) -> tuple[float, float] | str:
    try:
        from KDEpy.bw_selection import improved_sheather_jones
    except ImportError as error:
        return f"KDEpy not importable: {error}"
    ms, h = best_time(lambda: float(improved_sheather_jones(x[:, None])), repeat)
    return float(h), ms  # type: ignore[arg-type]


def measure(n: int, tolerance: float, repeat: int, exact_max_n: int) -> dict:
    x = bimodal(n)
    reps = repeat if n <= 10**7 else 1
    row: dict = {"n": n}
    ms, stages = best_time(lambda: plugin_stages(x, method="binned", tolerance=tolerance), reps)
    row.update(binned_ms=ms, h_binned=stages.h, grid_size=stages.grid_size)
    spec = GridSpec.covering(x.min(), x.max(), stages.grid_size)
    row["binning_ms"], _ = best_time(lambda: linear_bin(x, spec), reps)
    if n <= exact_max_n:
        ms, exact = best_time(lambda: plugin_stages(x, method="exact", backend="cpu"), max(1, reps // 2))
        row.update(exact_cpu_ms=ms, h_exact=exact.h, binned_rel_diff=abs(stages.h / exact.h - 1.0))
        row["binned_abs_diff"] = abs(stages.h - exact.h)
    isj = run_isj(x, reps)
    if isinstance(isj, str):
        row["isj_skipped"] = isj
    else:
        row.update(h_isj=isj[0], isj_ms=isj[1])
    dpik = run_dpik(x, reps)
    if isinstance(dpik, str):
        row["dpik_skipped"] = dpik
    else:
        row.update(h_dpik=dpik[0], dpik_ms=dpik[1])
        if "h_exact" in row:
            row["dpik_rel_diff"] = abs(dpik[0] / row["h_exact"] - 1.0)
            row["dpik_abs_diff"] = abs(dpik[0] - row["h_exact"])
    for peer in ("exact_cpu", "isj", "dpik"):
        if f"{peer}_ms" in row:
            row[f"{peer}_over_binned"] = row[f"{peer}_ms"] / row["binned_ms"]
    return row


def _fmt(value, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [
        "# Binned PLUGIN",
        "",
        (
            f"Machine: {meta['machine']}. Tolerance {meta['tolerance']:g} (relative, on h). Bimodal data "
            "(half N(-2, 0.5^2), half N(2, 0.5^2)); scale sd; dpik with scalest = \"stdev\" (401 bins). "
            "Times in ms, best of the repeats (one call above 10^7). Ratios: peer time / binned time. "
            "rel diff: |h - h_exact| / h_exact (abs diff: |h - h_exact|), h_exact from the exact cpu PLUGIN."
        ),
        "",
        (
            "| n | grid | binned ms | of which binning ms | exact cpu ms | exact/binned | binned rel diff | "
            "binned abs diff | dpik ms | dpik/binned | dpik rel diff | dpik abs diff | ISJ ms | ISJ/binned |"
        ),
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['n']} | {r['grid_size']} | {r['binned_ms']:.2f} | {r['binning_ms']:.2f} | "
            f"{_fmt(r.get('exact_cpu_ms'), '.1f')} | {_fmt(r.get('exact_cpu_over_binned'), '.0f')} | "
            f"{_fmt(r.get('binned_rel_diff'), '.1e')} | {_fmt(r.get('binned_abs_diff'), '.1e')} | "
            f"{_fmt(r.get('dpik_ms'), '.2f')} | {_fmt(r.get('dpik_over_binned'), '.2f')} | "
            f"{_fmt(r.get('dpik_rel_diff'), '.1e')} | {_fmt(r.get('dpik_abs_diff'), '.1e')} | "
            f"{_fmt(r.get('isj_ms'), '.2f')} | {_fmt(r.get('isj_over_binned'), '.2f')} |"
        )
    skipped = sorted({f"{k}: {v}" for r in rows for k, v in r.items() if k.endswith("_skipped")})
    if skipped:
        lines += ["", "Skipped: " + "; ".join(skipped)]
    lines += ["", "h per n: " + "; ".join(
        f"n={r['n']}: binned {r['h_binned']:.7g}, exact {_fmt(r.get('h_exact'), '.7g')}, "
        f"dpik {_fmt(r.get('h_dpik'), '.7g')}, ISJ {_fmt(r.get('h_isj'), '.7g')}" for r in rows
    )]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="16384,1000000,10000000,100000000")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--exact-max-n", type=int, default=16384)
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    meta = {"machine": machine(), "tolerance": args.tolerance, "repeat": args.repeat}
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        rows.append(measure(n, args.tolerance, args.repeat, args.exact_max_n))
        print(json.dumps(rows[-1]), flush=True)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "binned_plugin.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    table = markdown(rows, meta)
    (args.output_dir / "binned_plugin.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
