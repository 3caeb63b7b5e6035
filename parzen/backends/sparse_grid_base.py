"""What a sparse-grid backend is: the products of the design matrix B.

B_{g,j} = phi_g(x_j) (paper 004 in docs/statistics.md, eq. 2) is never formed; a
:class:`SparseGridBackend` computes its two products (algorithm 1 there: ``mult`` and
``multTranspose``) and wraps them, for one data set, as an operator (:meth:`SparseGridBackend.design`)
that the CG solver of :mod:`parzen.sparsegrid` calls.  The grid is given by its subspace codes
and offsets (:class:`parzen.sparsegrid.SparseGrid`).
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np


class SparseGridBackend(abc.ABC):
    """The sparse-grid operators of one backend ("numpy", "cpu", "gpu").

    A subclass implements :attr:`name`, :attr:`dtypes`, :meth:`mult` and :meth:`mult_transpose`;
    :meth:`design` returns a :class:`HostDesign` over them unless the backend keeps the data
    itself (the GPU's ``DeviceDesign``).
    """

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """The registered name ("numpy", "cpu", "gpu")."""

    @property
    @abc.abstractmethod
    def dtypes(self) -> tuple[np.dtype, ...]:
        """The floating-point types this backend computes in, its default first."""

    @abc.abstractmethod
    def mult(
        self, X: np.ndarray, codes: np.ndarray, offsets: np.ndarray, v: np.ndarray, *, modified: bool, dtype=None
    ) -> np.ndarray:
        """u = B v: u_g = sum_j phi_g(x_j) v_j for every grid point g (paper 004, algorithm 1, mult).

        Parameters
        ----------
        X : ndarray of shape (m, d)
            Points in [0, 1]^d.
        codes, offsets : ndarray
            The grid's subspace codes (S, d) and coefficient offsets (S + 1,).
        v : ndarray of shape (m,)
            One value per point.
        modified : bool
            Modified (boundary-extrapolating) hats.
        dtype : None or dtype
            Type of the basis values (None: the backend's default); sums in float64.

        Returns
        -------
        ndarray of shape (grid size,), float64
        """

    @abc.abstractmethod
    def mult_transpose(
        self, X: np.ndarray, codes: np.ndarray, offsets: np.ndarray, alpha: np.ndarray, *, modified: bool, dtype=None
    ) -> np.ndarray:
        """v = B^T alpha: v_j = sum_g alpha_g phi_g(x_j), the sparse-grid function at every point
        (paper 004, algorithm 1, multTranspose).

        Parameters
        ----------
        X, codes, offsets, modified, dtype
            As in :meth:`mult`.
        alpha : ndarray of shape (grid size,)
            The coefficients.

        Returns
        -------
        ndarray of shape (m,), float64
        """

    def design(self, X01: np.ndarray, grid: Any, *, dtype=None) -> Any:
        """B over the points X01 (m, d) in [0, 1]^d on ``grid`` (a ``parzen.sparsegrid.SparseGrid``).

        Parameters
        ----------
        X01 : ndarray of shape (m, d)
            Points scaled to the unit cube.
        grid : SparseGrid
            Its ``codes``, ``offsets`` and ``modified`` are read.
        dtype : None or dtype
            As in :meth:`mult`.

        Returns
        -------
        HostDesign or an operator with the same three methods
        """
        return HostDesign(self, X01, grid.codes, grid.offsets, grid.modified, dtype)

    def close(self) -> None:
        """Release what this instance holds (nothing for the host backends)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class HostDesign:
    """B for data held in host memory, computed by a backend's two products.

    Parameters
    ----------
    backend : SparseGridBackend
        Computes the products.
    X01 : ndarray of shape (m, d)
        Points in [0, 1]^d.
    codes, offsets, modified
        The grid, as in :meth:`SparseGridBackend.mult`.
    dtype : None or dtype
        As there.
    """

    def __init__(self, backend: SparseGridBackend, X01: np.ndarray, codes, offsets, modified: bool, dtype=None) -> None:
        self._backend, self._X, self._dtype = backend, X01, dtype
        self._codes, self._offsets, self._modified = codes, offsets, modified

    def mult(self, v: np.ndarray) -> np.ndarray:
        """u = B v (length: grid size)."""
        return self._backend.mult(self._X, self._codes, self._offsets, v, modified=self._modified, dtype=self._dtype)

    def mult_transpose(self, alpha: np.ndarray) -> np.ndarray:
        """v = B^T alpha (length: number of points)."""
        return self._backend.mult_transpose(
            self._X, self._codes, self._offsets, alpha, modified=self._modified, dtype=self._dtype
        )

    def normal(self, p: np.ndarray) -> np.ndarray:
        """B B^T p."""
        return self.mult(self.mult_transpose(p))
