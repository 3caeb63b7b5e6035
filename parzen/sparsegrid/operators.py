"""The sparse-grid design matrix B (B_{g,j} = phi_g(x_j), paper 004 eq. 2) as an operator.

Only its products are ever formed: ``mult`` (u = B v, one value per grid point) and
``mult_transpose`` (v = B^T alpha, one value per data point), both from the backend's
primitives ``sparse_grid_mult`` / ``sparse_grid_mult_transpose``; ``normal`` is B B^T p, the
product CG needs.  A backend with ``prepare_sparse_grid`` (the GPU's) keeps the data where it
computes and streams it there; the others get :class:`HostDesign`.
"""

from __future__ import annotations

import numpy as np

from ..backends import get_backend
from .grid import SparseGrid


class HostDesign:
    """B for data held in host memory, computed by a backend's two primitives."""

    def __init__(self, backend, X01: np.ndarray, grid: SparseGrid, dtype=None) -> None:
        self._backend, self._X, self._grid, self._dtype = backend, X01, grid, dtype

    def _arguments(self):
        return self._X, self._grid.codes, self._grid.offsets

    def mult(self, v: np.ndarray) -> np.ndarray:
        """u = B v (length: grid size)."""
        return self._backend.sparse_grid_mult(*self._arguments(), v, modified=self._grid.modified, dtype=self._dtype)

    def mult_transpose(self, alpha: np.ndarray) -> np.ndarray:
        """v = B^T alpha (length: number of points)."""
        return self._backend.sparse_grid_mult_transpose(
            *self._arguments(), alpha, modified=self._grid.modified, dtype=self._dtype
        )

    def normal(self, p: np.ndarray) -> np.ndarray:
        """B B^T p."""
        return self.mult(self.mult_transpose(p))


def design(X01: np.ndarray, grid: SparseGrid, *, backend: str = "auto", dtype=None):
    """B over the points X01 (m, d), already scaled to [0, 1]^d, on ``backend``."""
    module = get_backend(backend, dtype, work=float(X01.shape[0]) * grid.codes.shape[0] * grid.dim)
    prepare = getattr(module, "prepare_sparse_grid", None)
    prepared = None if prepare is None else prepare(X01, grid, dtype=dtype)
    return prepared if prepared is not None else HostDesign(module, X01, grid, dtype)
