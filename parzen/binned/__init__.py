"""Binned estimation: linear binning onto regular grids and the computations on the counts.

See :mod:`parzen.binned.grid` (grids, counts, binning on any backend) and
:mod:`parzen.binned.stream` (binning Parquet datasets and DuckDB tables in batches).
"""

from .grid import MAX_DIMENSIONS, BinCounts, GridSpec, linear_bin
from .stream import StreamedCounts, bin_duckdb, bin_parquet

__all__ = ["MAX_DIMENSIONS", "BinCounts", "GridSpec", "StreamedCounts", "bin_duckdb", "bin_parquet", "linear_bin"]
