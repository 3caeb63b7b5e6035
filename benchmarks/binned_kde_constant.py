"""The tolerance rule of binned KDE evaluation, measured: the largest relative error against exact.

``parzen.binned.density`` chooses the Gaussian's grid spacing as delta_a = sqrt(tolerance / (c d
R_a)), R_a the largest relative curvature of a pilot estimate, with c = CURVATURE_CONSTANTS[d]
for points anywhere (interpolated) and NODE_CURVATURE_CONSTANTS[d] for the nodes of a given grid
(``density_at_nodes``).  This script runs both rules with a trial constant c0 on bimodal samples
(a third N(3, 0.5^2), the rest N(0, 1) on each axis), n = 1 ... 10^6, d = 1, 2, the
normal-scale bandwidth and a quarter of it, tolerances 1e-3 and 1e-4, and reports the largest
|f~ - f| / f where f >= 1e-3 max f (exact: the cpu backend), divided by the tolerance:
"anywhere" at 4000 points (half uniform over the grid's box, half data points moved by N(0, H)),
"nodes" at 4000 nodes of a grid of spacing 2.999 delta (so refined 3 times, delta_actual =
0.9997 delta), half uniform, half the nodes nearest data points moved by N(0, H).  As the error
is c_true d delta^2 R, a rule needs c >= c0 times its largest ratio.  Writes
benchmarks/results/binned_kde_constant.md.

Run: ``PYTHONPATH=$PWD python benchmarks/binned_kde_constant.py [c0]`` (default c0 = 0.1).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from parzen import KDE
from parzen.binned import density as binned_density

RESULTS = Path(__file__).parent / "results"
SIZES = (1, 10, 100, 1000, 10_000, 100_000, 1_000_000)
QUERIES = 4000


def bimodal(n, d, rng):
    X = rng.standard_normal((n, d))
    X[: n // 3] = X[: n // 3] * 0.5 + 3.0
    return X


def largest_relative(f, exact):
    keep = exact >= binned_density.FLOOR * exact.max()
    return float(np.max(np.abs(f[keep] - exact[keep]) / exact[keep]))


def ratios(n, d, tolerance, scale, rng):
    """(anywhere ratio, its grid, nodes ratio); None where the grid exceeds MAX_GRID_NODES."""
    X = bimodal(n, d, rng)
    h = scale * 1.06 * max(n, 2) ** (-1 / (d + 4))
    H = h * h * np.eye(d)
    exact_kde = KDE(bandwidth=h if d == 1 else H, backend="cpu", method="exact").fit(X)
    half = QUERIES // 2
    near = X[rng.integers(0, n, half)] + h * rng.standard_normal((half, d))
    try:
        fit = binned_density.density_on_grid(X, H, "gaussian", tolerance=tolerance)
    except ValueError:
        anywhere, grid = None, None
    else:
        lows, highs = np.asarray(fit.spec.lows), np.asarray(fit.spec.highs)
        Q = np.vstack([rng.uniform(lows, highs, (half, d)), near])
        anywhere, grid = largest_relative(fit(Q), exact_kde.pdf(Q)) / tolerance, fit.spec.sizes
    reach = binned_density.kernel_reach("gaussian", H, tolerance)
    lows, highs = X.min(axis=0) - reach, X.max(axis=0) + reach
    step = 2.999 * binned_density.rule_spacing(X, H, "gaussian", lows, highs, tolerance=tolerance, at_nodes=True)
    axes = [np.arange(lo, hi + s, s) for lo, hi, s in zip(lows, highs, step)]
    try:
        values = binned_density.density_at_nodes(X, H, axes, "gaussian", tolerance=tolerance)
    except ValueError:  # beyond MAX_GRID_NODES
        return anywhere, grid, None
    sizes = np.array([len(a) for a in axes])
    index = np.vstack([rng.integers(0, sizes, (half, d)), np.clip(np.rint((near - lows) / step), 0, sizes - 1).astype(int)])
    nodes = np.column_stack([axes[a][index[:, a]] for a in range(d)])
    at_nodes = largest_relative(values[tuple(index.T)], exact_kde.pdf(nodes)) / tolerance
    return anywhere, grid, at_nodes


def main(c0):
    binned_density.CURVATURE_CONSTANTS = dict.fromkeys(range(1, 5), c0)
    binned_density.NODE_CURVATURE_CONSTANTS = dict.fromkeys(range(1, 5), c0)
    rng = np.random.default_rng(0)
    lines = [
        f"# Binned KDE tolerance rule, trial constant c0 = {c0}",
        "",
        "| d | n | h / normal scale | tolerance | grid (anywhere) | error / tolerance, anywhere | at nodes |",
        "|---|---|---|---|---|---|---|",
    ]
    worst = {(d, kind): 0.0 for d in (1, 2) for kind in ("anywhere", "nodes")}
    for d in (1, 2):
        for n in SIZES:
            for scale in (1.0, 0.25):
                for tolerance in (1e-3, 1e-4):
                    anywhere, grid, at_nodes = ratios(n, d, tolerance, scale, rng)
                    shown = ["over 2^24 nodes" if grid is None else " x ".join(map(str, grid))]
                    shown += ["" if r is None else f"{r:.3f}" for r in (anywhere, at_nodes)]
                    lines.append(f"| {d} | {n} | {scale} | {tolerance:g} | " + " | ".join(shown) + " |")
                    print(lines[-1], flush=True)
                    worst[d, "anywhere"] = max(worst[d, "anywhere"], anywhere or 0.0)
                    worst[d, "nodes"] = max(worst[d, "nodes"], at_nodes or 0.0)
    lines.append("")
    for (d, kind), ratio in worst.items():
        lines.append(f"- d = {d}, {kind}: largest ratio {ratio:.3f}, the rule needs c >= {c0 * ratio:.3f}.")
    lines.append("")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "binned_kde_constant.md").write_text("\n".join(lines))
    print("\n".join(lines[-5:]))


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 0.1)
