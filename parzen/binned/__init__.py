"""Binned estimation: linear binning onto regular grids and the computations on the counts.

See :mod:`parzen.binned.grid`.
"""

from .grid import MAX_DIMENSIONS, BinCounts, GridSpec, linear_bin

__all__ = ["MAX_DIMENSIONS", "BinCounts", "GridSpec", "linear_bin"]
