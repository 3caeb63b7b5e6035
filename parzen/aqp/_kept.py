"""What ratio / CASE answers keep between queries on one sample: per-row terms and the sums read from them.

:func:`parzen.aqp.ratios.approximate` answers a query's sub-queries (:mod:`parzen.aqp.case_aggregates`)
and builds the per-row terms of its variance within :func:`shared_terms`.  There, what depends only
on the sample, the ranges on its numeric columns and their kernels (the rows' kernel masses and
polynomial terms, :func:`parzen.aqp.aggregates.sample_terms`; the plain stratified estimates of a
sub-query without categorical filters, :func:`parzen.aqp.answers.stratified_estimates`) is made once
and kept with the sample's :class:`~parzen.aqp.strata.Layout` (a reloaded synopsis has a new one):
the queries of a family that differ in their CASE conditions or IN lists on categorical columns
(TPC-H Q14's promotion share per type) share it, and every reader gets the floats it would have made.
Each layout keeps the last :data:`KEPT_MOST` values, of at most :data:`KEPT_ROWS` sampled rows in all
(the newest whatever its size; a sample's terms count as the whole sample's rows: about a dozen arrays of
floats, 100 MB at most in all).  Outside :func:`shared_terms` nothing is kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from .strata import Layout

#: The values kept per layout.
KEPT_MOST = 8
#: The sampled rows that the kept values may span in all.
KEPT_ROWS = 1 << 20
_SHARED: ContextVar[bool] = ContextVar("parzen_shared_terms", default=False)
_LOCK = threading.Lock()  # answers may run in several threads (parzen serve)
T = TypeVar("T")


@contextmanager
def shared_terms() -> Iterator[None]:
    """Within it, :func:`kept` keeps what it makes (see the module).

    Yields
    ------
    None
    """
    token = _SHARED.set(True)
    try:
        yield
    finally:
        _SHARED.reset(token)


def sharing() -> bool:
    """Whether this runs within :func:`shared_terms`.

    Returns
    -------
    bool
    """
    return _SHARED.get()


def kept(layout: Layout, key: Hashable, make: Callable[[], T], rows: Callable[[T], int]) -> T:
    """The value kept under ``key`` for ``layout``, or ``make()`` (kept within :func:`shared_terms`).

    Parameters
    ----------
    layout : Layout
        The sample it is of (:attr:`~parzen.aqp.strata.Layout.kept_terms` holds it).
    key : hashable
        Everything else the value depends on.
    make : callable
        Makes the value.
    rows : callable
        The sampled rows a value spans (its share of :data:`KEPT_ROWS`).

    Returns
    -------
    The value.
    """
    if not _SHARED.get():
        return make()
    store = layout.kept_terms  # insertion order: the least recently used first
    with _LOCK:
        if key in store:
            store[key] = store.pop(key)
            return store[key][0]
    value = make()
    with _LOCK:
        store.pop(key, None)
        store[key] = (value, rows(value))
        while len(store) > 1 and (len(store) > KEPT_MOST or sum(size for _, size in store.values()) > KEPT_ROWS):
            del store[next(iter(store))]
    return value
