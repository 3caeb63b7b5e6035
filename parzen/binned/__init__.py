"""Binned estimation: linear binning onto regular grids and the computations on the counts.

See :mod:`parzen.binned.grid` (grids, counts, binning on any backend), :mod:`parzen.binned.stream`
(binning Parquet datasets and DuckDB tables in batches) and :mod:`parzen.binned.density` (KDE
evaluation on a grid by FFT, at given grid nodes or interpolated).
"""

from .density import BinnedDensity, density_at_nodes, density_on_grid
from .grid import MAX_DIMENSIONS, BinCounts, GridSpec, linear_bin
from .stream import StreamedCounts, bin_duckdb, bin_parquet

__all__ = [
    "MAX_DIMENSIONS",
    "BinCounts",
    "BinnedDensity",
    "GridSpec",
    "StreamedCounts",
    "bin_duckdb",
    "bin_parquet",
    "density_at_nodes",
    "density_on_grid",
    "linear_bin",
]
