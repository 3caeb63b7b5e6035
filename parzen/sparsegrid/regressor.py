"""Regression on a regular sparse grid, scikit-learn style (paper 004, section 2.1).

f(x) = sum_g alpha_g phi_g(x) minimises (1/m) sum_j (y_j - f(x_j))^2 + lambda |alpha|^2, i.e.

    (1/m B B^T + lambda I) alpha = 1/m B y          (paper 004, eq. 2)

solved by conjugate gradients (SciPy's ``cg``) with only the products B v and B^T alpha
formed (:mod:`parzen.sparsegrid.operators`).  Inputs are scaled to the unit cube by the
training minimum and maximum of each feature (stored with the model); points outside that box
are clipped to it, so the fit continues constantly beyond the training data.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import ClassVar

import numpy as np
from scipy.sparse.linalg import LinearOperator, cg

from .._params import Parameters
from .._progress import progress_bar
from .._validate import as_data, as_queries, choose
from .grid import BASES, SparseGrid
from .operators import design


class SparseGridRegressor(Parameters):
    """Least-squares regression on a regular sparse grid.

    Parameters (keyword-only; stored as given, all work happens in :meth:`fit`):

    level : int, default 4
        Level n of the regular sparse grid (paper 004 used 4 for Friedman1, 6 in 2-D).
    basis : str, default "modlinear"
        "modlinear" (hats that extrapolate towards the faces), "linear" (hats, zero on the
        faces) or "linearboundary" (hats plus points on the faces); see ``parzen.sparsegrid.grid``.
    lambda_ : float, default 1e-6
        Weight of the penalty lambda |alpha|^2 (paper 004, section 5.2: 1e-6).
    max_iter : int, default 250
        Conjugate-gradient iterations at most (paper 004: 250).
    tol : float, default 1e-6
        Stop when |residual| <= tol |1/m B y|; 0 runs all ``max_iter`` iterations.
    backend, dtype : as everywhere in parzen ("auto": GPU for large data, else Numba; or a
        ``parzen.backends.SparseGridBackend`` instance).
    progress : bool, default False
        A progress bar over the CG iterations.

    Fitted attributes: ``grid_`` (SparseGrid), ``coef_`` (alpha, one per grid point),
    ``n_iter_``, ``residual_`` (final relative residual), ``feature_min_``, ``feature_max_``,
    ``n_features_in_``, ``feature_names_in_``.
    """

    _parameter_constraints: ClassVar[dict[str, tuple]] = {"basis": BASES}

    def __init__(
        self,
        *,
        level: int = 4,
        basis: str = "modlinear",
        lambda_: float = 1e-6,
        max_iter: int = 250,
        tol: float = 1e-6,
        backend: str = "auto",
        dtype=None,
        progress: bool = False,
    ):
        self.level = level
        self.basis = basis
        self.lambda_ = lambda_
        self.max_iter = max_iter
        self.tol = tol
        self.backend = backend
        self.dtype = dtype
        self.progress = progress

    # -- fitting ----------------------------------------------------------------------------
    def fit(self, X, y) -> SparseGridRegressor:
        """Scale X to the unit cube, build the grid and solve eq. (2) by CG."""
        self._check_parameters()
        data = as_data(X, min_rows=2)
        target = _as_target(y, data.n)
        low, high = data.values.min(axis=0), data.values.max(axis=0)
        constant = [c for c, span in zip(data.columns, high - low) if span == 0.0]
        if constant:
            raise ValueError(
                f"X has zero variance in column(s) {', '.join(map(repr, constant))}; "
                "a constant feature cannot be scaled to the unit cube: drop it"
            )
        self.feature_min_, self.feature_max_ = low, high
        self.n_features_in_ = data.d
        self.feature_names_in_ = np.asarray(data.columns, dtype=object)
        self.grid_ = SparseGrid(data.d, int(self.level), self.basis)
        B = design(self._unit(data.values), self.grid_, backend=self.backend, dtype=self.dtype)
        m = data.n
        rhs = B.mult(target) / m
        system = LinearOperator(
            (self.grid_.size, self.grid_.size), matvec=lambda p: B.normal(p) / m + self.lambda_ * p, dtype=np.float64
        )
        iterations = 0
        with progress_bar(self.progress, f"CG on {self.grid_.size} grid points", total=self.max_iter) as bar:

            def count(_):
                nonlocal iterations
                iterations += 1
                bar.advance()

            alpha, _ = cg(system, rhs, rtol=self.tol, atol=0.0, maxiter=int(self.max_iter), callback=count)
        self.coef_ = alpha
        self.n_iter_ = iterations
        norm = np.linalg.norm(rhs)
        self.residual_ = float(np.linalg.norm(system.matvec(alpha) - rhs) / norm) if norm > 0 else 0.0
        return self

    def predict(self, X) -> np.ndarray:
        """f(x) = sum_g alpha_g phi_g(x) at each row of X (B^T alpha)."""
        if not hasattr(self, "coef_"):
            raise RuntimeError("this SparseGridRegressor is not fitted yet; call fit(X, y) first")
        values = as_queries(X, self.n_features_in_, name="X")
        B = design(self._unit(values), self.grid_, backend=self.backend, dtype=self.dtype)
        return B.mult_transpose(self.coef_)

    def score(self, X, y) -> float:
        """Coefficient of determination R^2 of the predictions (as scikit-learn's regressors)."""
        predicted = self.predict(X)
        target = _as_target(y, predicted.size)
        residual = target - predicted
        spread = target - target.mean()
        return float(1.0 - residual @ residual / (spread @ spread))

    def _unit(self, values: np.ndarray) -> np.ndarray:
        """Rows scaled by the training box to [0, 1]^d (clipped)."""
        scaled = values - self.feature_min_
        scaled /= self.feature_max_ - self.feature_min_
        return np.clip(scaled, 0.0, 1.0, out=scaled)

    def _check_parameters(self) -> None:
        choose(self.basis, BASES, what="basis")
        if not isinstance(self.level, Integral) or self.level < 1:
            raise ValueError(f"level must be a positive integer, got {self.level!r}")
        if not isinstance(self.lambda_, Real) or not self.lambda_ >= 0:
            raise ValueError(f"lambda_ must be a number >= 0, got {self.lambda_!r}")
        if not isinstance(self.max_iter, Integral) or self.max_iter < 1:
            raise ValueError(f"max_iter must be a positive integer, got {self.max_iter!r}")
        if not isinstance(self.tol, Real) or not self.tol >= 0:
            raise ValueError(f"tol must be a number >= 0, got {self.tol!r}")


def _as_target(y, n: int) -> np.ndarray:
    """y as a finite float64 vector of n values."""
    target = as_data(y, name="y", min_rows=0).values
    if target.shape[1] != 1:
        raise ValueError(f"y must be one column of targets, got shape {np.shape(y)}")
    if target.shape[0] != n:
        raise ValueError(f"y has {target.shape[0]} values but X has {n} rows; they must match")
    return target[:, 0]
