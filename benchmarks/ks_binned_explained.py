"""Why parzen's binned plugin_H and R's ``ks::Hpi(x, binned = TRUE)`` differ at d = 3 (4.5x at
n = 10^6 in binned_plugin_H.md), measured against the exact H.

Usage: python benchmarks/ks_binned_explained.py [--sizes 10000 100000 1000000] [--ks-grids 31]
       [--emulated-grids 151] [--emulated-up-to 10000] [--exact-from FILE] [--note TEXT] [--output-dir DIR]

Data: benchmarks/binned_plugin_H.py's mixture, d = 3.  For each n, against the exact H (the cpu
backend's at n <= 10^4, else the GPU backend's from ``--exact-from``):

- ks: ``Hpi(x, binned = TRUE, bgridsize = rep(m, 3))`` for each m of ``--ks-grids`` (31 is
  ``ks:::default.bgridsize(3)``, what ``Hpi`` uses when no bgridsize is given), timed in R;
- "ks emulated": parzen's pilots and optimiser on ks's binned functionals, rebuilt in parzen --
  plain linear binning (``BinnedDerivativeSums.psi(corrected=False)``) of the sphered data as
  ks 1.14's ``Hpi`` bins them for d = 3 (its "dscalar" pilot): the pilot's Psi_6 on 31^3 nodes
  (``gdscalar`` is not passed ``bgridsize``) spanning [min - 3.7 g, max + 3.7 g] per axis
  (``ks:::dmvnorm.deriv.sum`` -> ``ks:::binning``), Psi_4 on m^3 nodes spanning the data widened by
  3.7 sqrt of the oversmoothed H.max's diagonal (``bin.par.star``) -- so that matching ks's H shows
  the difference is ks's grid and nothing else;
- the same grid with the binning error's delta^2 term taken out (parzen's correction);
- for each m of ``--emulated-grids`` at n <= ``--emulated-up-to``: the emulation alone (no R run),
  what ks would give with that bgridsize (its pilot stage stays on 31^3);
- parzen's binned plugin_H at the default tolerance (capped grid, from binned_plugin_H.json).

Writes ks_binned_explained.{json,md} into benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from math import gamma
from pathlib import Path

import numpy as np
from _common import machine
from binned_plugin_H import mixture, relative, stored_exact

from parzen.bandwidth import plugin_H
from parzen.bandwidth import plugin_matrix as P
from parzen.binned.derivative_sums import BinnedDerivativeSums, DerivativeCounts
from parzen.binned.grid import GridSpec

RESULTS = Path(__file__).parent / "results"

R_SCRIPT = """
suppressMessages(library(ks))
args <- commandArgs(trailingOnly = TRUE)
n <- as.integer(args[2]); d <- as.integer(args[3]); m <- as.integer(args[4])
x <- matrix(readBin(args[1], what = "double", n = d * n, endian = "little"), ncol = d, byrow = TRUE)
t0 <- proc.time()[["elapsed"]]
H <- Hpi(x, binned = TRUE, bgridsize = rep(m, d))
cat(sprintf("%.17g", c(H, proc.time()[["elapsed"]] - t0)), "\\n")
"""

#: ks:::binning widens each axis by this many pilot scales (its default ``supp``).
KS_SUPPORT = 3.7


#: ks:::default.bgridsize(3): the grid of the pilot stage whatever bgridsize Hpi is given.
KS_PILOT_NODES = 31


def ks_oversmoothed_scale(n: int, d: int) -> float:
    """sqrt of H.max's diagonal in ks 1.14's Hpi for sphered data (var(x*) = I) and r = 0:
    ((d + 8)^((d + 6)/2) pi^(d/2) R(K) / (16 (d + 2) n Gamma(d/2 + 4)))^(1/(d + 4)), R(K) = (4 pi)^(-d/2)."""
    kernel = (4.0 * np.pi) ** (-d / 2)
    return float(((d + 8) ** ((d + 6) / 2) * np.pi ** (d / 2) * kernel / (16 * (d + 2) * n * gamma(d / 2 + 4))) ** (1 / (d + 4)))


class KsGridFunctionals:
    """Binned Psi_alpha(g) as ks 1.14's Hpi computes them for d = 3 (module docstring): order 6
    on :data:`KS_PILOT_NODES` per axis spanning the data widened by :data:`KS_SUPPORT` g, order
    4 on ``nodes`` per axis spanning the data widened by :data:`KS_SUPPORT` times the oversmoothed scale."""

    def __init__(self, Y: np.ndarray, nodes: int, corrected: bool) -> None:
        self.Y, self.nodes, self.corrected = Y, nodes, corrected
        self.final_widening = KS_SUPPORT * ks_oversmoothed_scale(*Y.shape)

    def __call__(self, g: float, alphas: np.ndarray) -> np.ndarray:
        final = int(np.sum(alphas[0])) == 4
        widening, nodes = (self.final_widening, self.nodes) if final else (KS_SUPPORT * g, KS_PILOT_NODES)
        spec = GridSpec.covering(self.Y.min(axis=0) - widening, self.Y.max(axis=0) + widening, nodes)
        sums = BinnedDerivativeSums(DerivativeCounts.of(self.Y, spec), len(self.Y))
        return sums.psi(g, alphas, corrected=self.corrected)


def on_ks_grid(x: np.ndarray, nodes: int, corrected: bool) -> np.ndarray:
    """plugin_H's pilots and optimiser (follow_ks, as the default) on :class:`KsGridFunctionals`."""
    sample = P._sample(x, None, "sphere")
    psi4 = P.psi4_matrix(sample, backend=None, dtype=None, follow_ks=True,
                         functionals=KsGridFunctionals(sample.Y, nodes, corrected))
    return sample.back(P.minimise_full(lambda H: P.amise(H, psi4, sample.n), P.normal_scale_start(sample)))


def run_ks(x: np.ndarray, nodes: int) -> tuple[np.ndarray, float]:
    n, d = x.shape
    with tempfile.TemporaryDirectory() as tmp:
        data, script = Path(tmp) / "x.bin", Path(tmp) / "hpi.R"
        np.ascontiguousarray(x, dtype="<f8").tofile(data)
        script.write_text(R_SCRIPT)
        done = subprocess.run(["Rscript", str(script), str(data), str(n), str(d), str(nodes)],
                              capture_output=True, text=True, check=True)
    values = [float(v) for v in done.stdout.split()]
    return np.array(values[: d * d]).reshape(d, d), values[d * d]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--ks-grids", type=int, nargs="+", default=[31])
    parser.add_argument("--emulated-grids", type=int, nargs="*", default=[151])
    parser.add_argument("--emulated-up-to", type=int, default=10_000)
    parser.add_argument("--exact-from", type=Path, default=RESULTS / "binned_plugin_H_exact.json")
    parser.add_argument("--binned-from", type=Path, default=RESULTS / "binned_plugin_H.json")
    parser.add_argument("--note", default="")
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    stored = stored_exact(args.exact_from)
    binned = {(r["n"], r["d"]): r for r in json.loads(args.binned_from.read_text())["rows"]} if args.binned_from.exists() else {}
    rows = []
    for n in args.sizes:
        x = mixture(n, 3)
        exact = np.asarray(stored[(n, 3)][0]) if (n, 3) in stored else np.asarray(plugin_H(x, method="exact", backend="cpu"))
        grids = [(m, True) for m in args.ks_grids] + [(m, False) for m in args.emulated_grids if n <= args.emulated_up_to]
        for nodes, with_ks in grids:
            row: dict = {"n": n, "nodes": nodes}
            emulated = on_ks_grid(x, nodes, corrected=False)
            corrected = on_ks_grid(x, nodes, corrected=True)
            row.update(emulated_vs_exact=relative(emulated, exact), corrected_vs_exact=relative(corrected, exact),
                       H_emulated=emulated.tolist(), H_corrected=corrected.tolist(), H_exact=exact.tolist())
            if with_ks:
                H_ks, row["ks_s"] = run_ks(x, nodes)
                row.update(ks_vs_exact=relative(H_ks, exact), emulated_vs_ks=relative(emulated, H_ks), H_ks=H_ks.tolist())
            if (n, 3) in binned:
                row["parzen_grid"] = binned[(n, 3)]["grid"]
                row["parzen_vs_exact"] = relative(binned[(n, 3)]["H_binned"], exact)
            rows.append(row)
            print({k: v for k, v in row.items() if not k.startswith("H_")}, flush=True)
    write(args.output_dir, rows, machine() + args.note)


def write(output_dir: Path, rows: list[dict], where: str) -> None:
    lines = [
        "# Why ks::Hpi(binned = TRUE) and parzen's binned plugin_H differ at d = 3", "",
        (f"Machine: {where}. Command: `python benchmarks/ks_binned_explained.py`. Data: binned_plugin_H.py's mixture, "
         "d = 3. Relative Frobenius differences against the exact H (cpu backend at n = 10^4, else the GPU backend's, "
         "binned_plugin_H_exact.json). ks: Hpi(x, binned = TRUE, bgridsize = rep(m, 3)) (m = 31 is what Hpi uses by default "
         "for d = 3, ks:::default.bgridsize; its pilot stage bins on 31^3 whatever m). "
         "Emulated: parzen's pilots and optimiser on plain linear-binning functionals on ks's grids (Psi_6 on 31^3 nodes "
         "over the sphered data widened by 3.7 g, Psi_4 on m^3 nodes widened by 3.7 sqrt(H.max), as ks 1.14's Hpi); "
         "corrected: the same grids "
         "with the binning error's delta^2 term taken out; parzen: binned plugin_H at the default tolerance 1e-3 "
         "(capped grid, binned_plugin_H.md)."), "",
        "| n | m | ks s | ks vs exact | emulated vs ks | emulated vs exact | corrected vs exact | parzen grid | parzen vs exact |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        grid = " x ".join(map(str, r["parzen_grid"])) if "parzen_grid" in r else "-"
        ours = f"{r['parzen_vs_exact']:.1e}" if "parzen_vs_exact" in r else "-"
        def cell(key: str, form: str, r: dict = r) -> str:
            return format(r[key], form) if key in r else "not run"

        lines.append(f"| {r['n']} | {r['nodes']} | {cell('ks_s', '.1f')} | {cell('ks_vs_exact', '.1e')} | {cell('emulated_vs_ks', '.1e')} | "
                     f"{r['emulated_vs_exact']:.1e} | {r['corrected_vs_exact']:.1e} | {grid} | {ours} |")
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / "ks_binned_explained.json").write_text(json.dumps({"machine": where, "rows": rows}, indent=1) + "\n")
    (output_dir / "ks_binned_explained.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
