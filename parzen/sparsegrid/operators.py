"""The sparse-grid design matrix B (B_{g,j} = phi_g(x_j), paper 004 in docs/statistics.md, eq. 2)
as an operator.

Only its products are ever formed: ``mult`` (u = B v, one value per grid point) and
``mult_transpose`` (v = B^T alpha, one value per data point), by a
:class:`parzen.backends.SparseGridBackend`; ``normal`` is B B^T p, the product CG needs.  The
GPU's operator keeps the data where it computes and streams it there; the others compute on
the host (:class:`parzen.backends.HostDesign`).
"""

from __future__ import annotations

import numpy as np

from ..backends import SparseGridBackend, resolve_sparse_grid_backend
from .grid import SparseGrid


def design(X01: np.ndarray, grid: SparseGrid, *, backend: str | SparseGridBackend = "auto", dtype=None):
    """B over the points X01 (m, d), already scaled to [0, 1]^d, on ``backend``.

    Parameters
    ----------
    X01 : ndarray of shape (m, d)
        Points in the unit cube.
    grid : SparseGrid
        The grid.
    backend : "auto", "numpy", "cpu", "gpu" or SparseGridBackend
        Resolved here, from the work m x subspaces x d ("auto": the GPU for large data).
    dtype : None or dtype
        Type of the basis values.

    Returns
    -------
    operator
        With ``mult``, ``mult_transpose`` and ``normal``.
    """
    work = float(X01.shape[0]) * grid.codes.shape[0] * grid.dim
    return resolve_sparse_grid_backend(backend, dtype, work=work).design(X01, grid, dtype=dtype)
