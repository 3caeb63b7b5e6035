"""Binned estimation: linear binning onto regular grids and the computations on the counts.

See :mod:`parzen.binned.grid` (grids, linear binning) and :mod:`parzen.binned.density` (KDE
evaluation on a grid by FFT).
"""

from .density import BinnedDensity, density_on_grid
from .grid import MAX_DIMENSIONS, BinCounts, GridSpec, linear_bin

__all__ = ["MAX_DIMENSIONS", "BinCounts", "BinnedDensity", "GridSpec", "density_on_grid", "linear_bin"]
