"""Parzen on a Dask cluster: data partitioned over workers and pair sums split into tasks.

:class:`DaskData` serves a dask array or dask DataFrame as :class:`parzen.binned.source.ChunkedData`:
each partition is summarised on its worker and the summaries are added by a tree reduction
(:mod:`parzen.distributed.tree`).  :class:`DaskBackend` is a :class:`parzen.backends.KDEBackend`
whose pair sums and KDE sums are split into blocks run as Dask tasks, each on the worker's own
backend.  Both run on the current Dask client (:func:`parzen.distributed.client.dask_client`)
unless one is passed.  Needs ``pip install 'parzen[dask]'``.  See docs/distributed.md.
"""

from .._extras import require

require("dask", "distributed", extra="dask", what="parzen.distributed")  # before the modules below use them

from .backend import DaskBackend
from .client import dask_client
from .data import DaskData

__all__ = ["DaskBackend", "DaskData", "dask_client"]
