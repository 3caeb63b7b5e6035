"""Binned estimation: linear binning onto regular grids and the computations on the counts.

See :mod:`parzen.binned.grid` (grids, counts, binning on any backend), :mod:`parzen.binned.source`
(data served in chunks: :class:`ChunkedData`), :mod:`parzen.binned.stream` (Parquet datasets and
DuckDB tables read in batches: :class:`ParquetData`, :class:`DuckDBData`) and :mod:`parzen.binned.density` (KDE
evaluation on a grid by FFT, at given grid nodes or interpolated).
"""

from .density import BinnedDensity, density_at_nodes, density_on_grid
from .grid import MAX_DIMENSIONS, BinCounts, GridSpec, linear_bin
from .source import ArrayChunks, ChunkedData
from .stream import DuckDBData, ParquetData, StreamedCounts, bin_chunked, bin_duckdb, bin_parquet

__all__ = [
    "MAX_DIMENSIONS",
    "ArrayChunks",
    "BinCounts",
    "BinnedDensity",
    "ChunkedData",
    "DuckDBData",
    "GridSpec",
    "ParquetData",
    "StreamedCounts",
    "bin_chunked",
    "bin_duckdb",
    "bin_parquet",
    "density_at_nodes",
    "density_on_grid",
    "linear_bin",
]
