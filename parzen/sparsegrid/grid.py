"""Regular sparse grids: level vectors, subspaces, grid points and their count.

A regular sparse grid of level n in d dimensions (Bungartz & Griebel 2004, Acta Numerica 13,
section 3; paper 004, section 2.1) is the union of the hierarchical subspaces W_l whose level
vectors l (l_k >= 1) satisfy |l|_1 <= n + d - 1.  W_l holds the tensor-product basis functions

    phi_{l,i}(x) = prod_k phi_{l_k,i_k}(x_k),  phi_{l,i}(x) = max(1 - |2^l x - i|, 0)   (paper 004, eq. 1)

with odd indices i_k in 1 .. 2^{l_k} - 1, i.e. 2^{|l|_1 - d} functions with disjoint supports:
at any x exactly one function of each subspace can be non-zero, and its index follows from x
(``j_k = floor(x_k 2^{l_k - 1})``, ``i_k = 2 j_k + 1``).  The operators therefore visit the
subspaces, not the grid points (286 subspaces against 2001 points for d = 10, n = 4).

Three bases, named as in SG++:

- ``"linear"``: the hats above; every function vanishes on the faces of the unit cube.
- ``"modlinear"``: the modified hats of Pflueger (2010, *Spatially adaptive sparse grids for
  high-dimensional problems*, section 3.3): level 1 is the constant 1, and on levels > 1 the
  two outermost functions extrapolate linearly to the face (phi = 2 - 2^l x for i = 1,
  phi = 2^l x - i + 1 for i = 2^l - 1); no extra points, no zero on the faces.
- ``"linearboundary"``: the hats plus level-0 functions on the faces, phi_{0,0}(x) = 1 - x
  and phi_{0,1}(x) = x (the hat formula with l = 0).  Level 0 counts as level 1 in the level
  sum (SG++'s boundary grids with boundary level 1): l_k in {0, 1, ...} with
  sum_k max(l_k, 1) <= n + d - 1.  Both level-0 functions are non-zero everywhere, so each
  subspace with m level-0 coordinates is split into 2^m *pseudo-subspaces*, one per choice of
  face, each again with one non-zero function per point.

Subspaces are stored as integer *codes*, one per coordinate: c >= 1 is a hat (or modified hat)
of level c whose index follows from x; c = 0 is phi_{0,0} (1 - x) and c = -1 is phi_{0,1} (x), so
that a level-0 factor is 1 - |x + c|.  The coefficients of a subspace are contiguous, starting at
its offset, in row-major order of (j_0, ..., j_{d-1}) with j_k in 0 .. 2^{c_k - 1} - 1 (a level-0
coordinate contributes no digit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

#: The bases a grid can carry (SG++'s names).
BASES = ("linear", "modlinear", "linearboundary")
#: The largest grid the operators accept (coefficients held in memory, indices in int32 digits).
MAX_POINTS = 50_000_000


def _level_vectors(dim: int, total: int, lowest: int) -> np.ndarray:
    """All l in {lowest, ...}^dim with sum max(l_k, 1) <= total, ordered by that sum, then lexicographically."""
    vectors: list[tuple[int, ...]] = []

    def extend(prefix: tuple[int, ...], used: int) -> None:
        left = dim - len(prefix)
        if left == 0:
            vectors.append(prefix)
            return
        for level in range(lowest, total - used - (left - 1) + 1):
            extend((*prefix, level), used + max(level, 1))

    extend((), 0)
    vectors.sort(key=lambda v: (sum(max(level, 1) for level in v), v))
    return np.array(vectors, dtype=np.int32).reshape(len(vectors), dim)


def _split_faces(levels: np.ndarray) -> np.ndarray:
    """Codes of the pseudo-subspaces: each level-0 coordinate becomes 0 (face x = 0) or -1 (face x = 1)."""
    codes = []
    for vector in levels:
        faces = np.flatnonzero(vector == 0)
        for choice in range(1 << len(faces)):
            code = vector.copy()
            for bit, k in enumerate(faces):
                code[k] = -((choice >> bit) & 1)
            codes.append(code)
    return np.array(codes, dtype=np.int32).reshape(len(codes), levels.shape[1])


def regular_grid_size(dim: int, level: int, basis: str = "linear") -> int:
    """Number of points of a regular sparse grid, in closed form.

    Without boundary points (Bungartz & Griebel 2004, lemma 3.6):
    |G| = sum_{i=0}^{n-1} 2^i C(d - 1 + i, d - 1).
    With boundary points counted as level 1: choose the k coordinates whose level is above 1
    (levels 1 + a_j, a_j >= 1, sum a_j <= n - 1, 2^{a_j} points each) and give each of the other
    d - k coordinates the 3 points {0, 1/2, 1}:
    |G| = sum_k C(d, k) 3^{d-k} sum_{s=k}^{n-1} C(s - 1, k - 1) 2^s.
    """
    _check_grid_arguments(dim, level, basis)
    if basis != "linearboundary":
        return sum(2**i * math.comb(dim - 1 + i, dim - 1) for i in range(level))
    total = 3**dim  # k = 0: every coordinate at level <= 1
    for k in range(1, dim + 1):
        inner = sum(math.comb(s - 1, k - 1) * 2**s for s in range(k, level))
        total += math.comb(dim, k) * 3 ** (dim - k) * inner
    return total


def _check_grid_arguments(dim, level, basis) -> None:
    if not isinstance(dim, int | np.integer) or dim < 1:
        raise ValueError(f"a sparse grid needs dim >= 1, got {dim!r}")
    if not isinstance(level, int | np.integer) or level < 1:
        raise ValueError(f"a sparse grid needs level >= 1, got {level!r}")
    if basis not in BASES:
        raise ValueError(f"unknown basis {basis!r}; choose one of {', '.join(map(repr, BASES))}")


@dataclass(frozen=True)
class SparseGrid:
    """A regular sparse grid of ``level`` in ``dim`` dimensions with ``basis`` (one of BASES)."""

    dim: int
    level: int
    basis: str = "modlinear"

    def __post_init__(self) -> None:
        _check_grid_arguments(self.dim, self.level, self.basis)
        size = regular_grid_size(self.dim, self.level, self.basis)
        if size > MAX_POINTS:
            raise ValueError(
                f"a level-{self.level} grid in {self.dim} dimensions has {size:,} points, more than the "
                f"{MAX_POINTS:,} parzen handles; lower the level"
            )

    @cached_property
    def codes(self) -> np.ndarray:
        """(S, d) int32 subspace codes (see the module docstring)."""
        total = self.level + self.dim - 1
        if self.basis == "linearboundary":
            return _split_faces(_level_vectors(self.dim, total, lowest=0))
        return _level_vectors(self.dim, total, lowest=1)

    @cached_property
    def offsets(self) -> np.ndarray:
        """(S + 1,) int64: subspace s owns coefficients offsets[s] .. offsets[s + 1] - 1."""
        sizes = np.left_shift(1, np.maximum(self.codes - 1, 0).sum(axis=1).astype(np.int64))
        return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    @property
    def size(self) -> int:
        """Number of grid points (basis functions)."""
        return int(self.offsets[-1])

    @property
    def modified(self) -> bool:
        """Whether the outer functions are SG++'s modified (extrapolating) hats."""
        return self.basis == "modlinear"

    @cached_property
    def max_subspace_size(self) -> int:
        """Largest number of functions in one subspace, 2^{max |l|_1 - d}."""
        return int(np.diff(self.offsets).max())

    @cached_property
    def levels_indices(self) -> tuple[np.ndarray, np.ndarray]:
        """(N, d) levels and (N, d) indices of every grid point, in coefficient order."""
        levels = np.empty((self.size, self.dim), dtype=np.int32)
        indices = np.empty((self.size, self.dim), dtype=np.int64)
        for s, code in enumerate(self.codes):
            digits = [np.arange(1 << max(int(c) - 1, 0)) for c in code]
            grid = np.stack([g.ravel() for g in np.meshgrid(*digits, indexing="ij")], axis=1)
            rows = slice(self.offsets[s], self.offsets[s + 1])
            levels[rows] = np.maximum(code, 0)
            indices[rows] = np.where(code >= 1, 2 * grid + 1, -code)
        return levels, indices

    @property
    def points(self) -> np.ndarray:
        """(N, d) coordinates i / 2^l of the grid points in the unit cube."""
        levels, indices = self.levels_indices
        return indices / np.left_shift(1, levels.astype(np.int64))

    def __repr__(self) -> str:
        return f"SparseGrid(dim={self.dim}, level={self.level}, basis={self.basis!r}: {self.size} points)"
