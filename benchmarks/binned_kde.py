"""Binned KDE evaluation, n = 10^6: parzen (binned) against KDEpy FFTKDE, in the same run.

1-D: 4096 query points (FFTKDE's own equidistant grid), bandwidth h = 1.06 n^-1/5 (the normal
scale rule for N(0, 1) data, KDEpy's bw is the kernel's standard deviation).  2-D: FFTKDE's
512 x 512 grid of points, H = h^2 I with h = n^-1/6 (FFTKDE takes a scalar bw with norm=2).
Data: a bimodal Gaussian mixture.  parzen runs two ways on FFTKDE's points: "at nodes"
(``density_at_nodes`` on FFTKDE's grid, as ``FFTKDE.evaluate(grid)``: no interpolation) and
"interpolated" (``density_on_grid(X, H)(points)``, the grid of the tolerance rule; what
``KDE(method="binned").pdf`` does), both from the tolerance alone (1e-4 in 1-D, 1e-3 in 2-D), no
grid_size.  Errors: the largest |f - f_exact| / f_exact where f_exact >= 1e-3 of its maximum,
with f_exact from parzen's exact cpu backend on a random subsample of the query points (all of
them in 1-D).  Times: best of 10, each including binning and, for parzen, choosing the grid.
Writes benchmarks/results/binned_kde.json and .md.

Run: ``PYTHONPATH=$PWD python benchmarks/binned_kde.py [threads]``: with a thread count, Numba
runs on that many threads and the files are binned_kde_<threads>thread.*.  On a busy shared
machine a parallel region waits for every thread to be scheduled (milliseconds each), which
FFTKDE (one thread) does not.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from parzen import KDE
from parzen.binned import density_at_nodes, density_on_grid

N = 1_000_000
EXACT_SUBSAMPLE_2D = 2000
REPEATS = 10
RESULTS = Path(__file__).parent / "results"


def best_of(fn, repeats=REPEATS):
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def max_relative(f, exact):
    keep = exact >= 1e-3 * exact.max()
    return float(np.max(np.abs(f[keep] - exact[keep]) / exact[keep]))


def data(d, rng):
    X = rng.standard_normal((N, d))
    X[: N // 3] = X[: N // 3] * 0.5 + 3.0
    return X


def grid_axes(Q):
    """FFTKDE's grid points (m, d) as d equally spaced axes, and each point's node index."""
    axes = [np.unique(Q[:, a]) for a in range(Q.shape[1])]
    axes = [np.linspace(a[0], a[-1], len(a)) for a in axes]
    index = tuple(np.rint((Q[:, a] - ax[0]) / (ax[1] - ax[0])).astype(int) for a, ax in enumerate(axes))
    return axes, index


def one(d, rng, *, tolerance):
    from KDEpy import FFTKDE

    X = data(d, rng)
    h = 1.06 * N ** (-0.2) if d == 1 else N ** (-1 / 6)
    H = h * h * np.eye(d)
    grid_points = 4096 if d == 1 else (512, 512)
    x_fit = X[:, 0] if d == 1 else X
    t_kdepy, (points, f_kdepy) = best_of(lambda: FFTKDE(bw=h, kernel="gaussian", norm=2).fit(x_fit).evaluate(grid_points))
    Q = np.asarray(points, dtype=np.float64).reshape(-1, d)
    axes, index = grid_axes(Q)
    t_nodes, values = best_of(lambda: density_at_nodes(X, H, axes, tolerance=tolerance))
    t_interp, f_interp = best_of(lambda: density_on_grid(X, H, tolerance=tolerance)(Q))
    interp_grid = density_on_grid(X, H, tolerance=tolerance).spec.sizes
    idx = np.arange(len(Q)) if d == 1 else np.random.default_rng(1).choice(len(Q), EXACT_SUBSAMPLE_2D, replace=False)
    t0 = time.perf_counter()
    exact = KDE(bandwidth=h if d == 1 else H, backend="cpu", method="exact").fit(X).pdf(Q[idx])
    t_exact = time.perf_counter() - t0
    f_nodes = values[index]
    return {
        "d": d,
        "n": N,
        "query_points": len(Q),
        "bandwidth_sd": h,
        "parzen_tolerance": tolerance,
        "fftkde_s": t_kdepy,
        "parzen_at_nodes_s": t_nodes,
        "parzen_interpolated_s": t_interp,
        "parzen_interpolated_grid": list(interp_grid),
        "parzen_at_nodes_over_fftkde": t_nodes / t_kdepy,
        "parzen_interpolated_over_fftkde": t_interp / t_kdepy,
        "parzen_at_nodes_max_rel_err": max_relative(f_nodes[idx], exact),
        "parzen_interpolated_max_rel_err": max_relative(f_interp[idx], exact),
        "fftkde_max_rel_err": max_relative(np.asarray(f_kdepy)[idx], exact),
        "exact_points": len(idx),
        "exact_cpu_s": t_exact,
    }


def main(threads=None):
    import numba

    if threads is not None:
        numba.set_num_threads(threads)
    suffix = "" if threads is None else f"_{threads}thread"
    rng = np.random.default_rng(0)
    rows = [one(1, rng, tolerance=1e-4), one(2, rng, tolerance=1e-3)]
    machine = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {platform.system()}, Numba threads {numba.get_num_threads()}"
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"binned_kde{suffix}.json").write_text(json.dumps({"machine": machine, "load_average": load, "rows": rows}, indent=2))
    lines = [
        f"# Binned KDE evaluation, n = 10^6 ({machine}, shared with other work: load average {load} at the end)",
        "",
        (
            "| d | query points | tolerance | FFTKDE s | parzen at nodes s (/ FFTKDE) | parzen interpolated s (/ FFTKDE), "
            "its grid | FFTKDE max rel err | parzen at nodes | parzen interpolated | exact points (cpu s) |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['d']} | {r['query_points']} | {r['parzen_tolerance']:g} | {r['fftkde_s']:.4f} | "
            f"{r['parzen_at_nodes_s']:.4f} ({r['parzen_at_nodes_over_fftkde']:.2f}) | "
            f"{r['parzen_interpolated_s']:.4f} ({r['parzen_interpolated_over_fftkde']:.2f}), "
            f"{' x '.join(map(str, r['parzen_interpolated_grid']))} | {r['fftkde_max_rel_err']:.2e} | "
            f"{r['parzen_at_nodes_max_rel_err']:.2e} | {r['parzen_interpolated_max_rel_err']:.2e} | "
            f"{r['exact_points']} ({r['exact_cpu_s']:.1f}) |"
        )
    lines += [
        "",
        "Errors: largest relative difference from exact where the exact density >= 1e-3 of its maximum",
        "(exact: parzen's cpu backend). parzen's grids come from the tolerance alone (no grid_size=):",
        "at nodes, `density_at_nodes` on FFTKDE's grid (as `FFTKDE.evaluate(grid)`); interpolated,",
        "`density_on_grid(X, H)(points)` (as `KDE(method=\"binned\").pdf`). Times: best of 10, each",
        "including binning and choosing the grid.",
        "",
    ]
    (RESULTS / f"binned_kde{suffix}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else None)
