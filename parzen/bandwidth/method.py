"""Exact or binned: the one decision every selector makes, and the record of what it made.

Each selector that sums pairs takes ``method="exact" | "binned" | "auto"`` and decides with
:func:`choose_method`: "auto" is exact up to a number of rows set per selector from its measured
costs (:data:`parzen.bandwidth.plugin.AUTO_EXACT_MAX_N`, :data:`parzen.bandwidth.lscv.AUTO_BINNED_FROM`)
and binned beyond; data served in chunks (:class:`parzen.binned.source.ChunkedData`) are always
binned, and "exact" for them is an error that says how to fix it.

What a selector did is stated once, by :func:`report`: an INFO line on the logger
``"parzen.bandwidth"`` (``logging.basicConfig(level=logging.INFO)`` shows it), and a
:class:`MethodUsed` for :func:`parzen.bandwidth.selection`, which collects them with
:func:`recording`.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from .._validate import choose
from ..binned.grid import MAX_DIMENSIONS

#: The values of every selector's ``method=``.
METHODS = ("auto", "exact", "binned")

logger = logging.getLogger("parzen.bandwidth")


def choose_method(method: str, *, n: int, d: int = 1, exact_up_to: int, chunked: str | None = None,
                  what: str = "this selector") -> str:
    """"exact" or "binned": what ``method`` means for ``n`` rows of ``d`` columns.

    Parameters
    ----------
    method : {"auto", "exact", "binned"}
        The caller's choice.
    n, d : int
        Rows and columns of the data.
    exact_up_to : int
        "auto" is exact for n up to this and binned beyond (the selector's measured break-even).
    chunked : str, optional
        The description of data served in chunks (then only "binned" and "auto" are possible,
        and both mean binned), None for data in memory.
    what : str
        The selector, for the messages.

    Returns
    -------
    str
        "exact" or "binned".

    Raises
    ------
    ValueError
        For an unknown ``method``, "binned" with d > 4 (:data:`MAX_DIMENSIONS`), or "exact" (or
        d > 4) on data served in chunks.
    """
    choose(method, METHODS, what="method")
    if d > MAX_DIMENSIONS and (method == "binned" or chunked is not None):
        raise ValueError(
            f"{what}: binned estimation takes at most {MAX_DIMENSIONS} dimensions, not {d}; "
            + ("select fewer columns (data read in chunks are always binned)" if chunked is not None
               else "use method='exact' (or 'auto')")
        )
    if chunked is not None:
        if method == "exact":
            raise ValueError(
                f"{what}: method='exact' sums over every pair of rows, which needs the rows in memory, and "
                f"{chunked} is read in chunks; load it into memory (an array or DataFrame) for the exact "
                "method, or pass method='binned' or 'auto' (binned, to the stated tolerance)"
            )
        return "binned"
    if method == "auto":
        return "binned" if d <= MAX_DIMENSIONS and n > exact_up_to else "exact"
    return method


@dataclass(frozen=True)
class MethodUsed:
    """What one selector computed: its name, "exact" or "binned", the grid and the rows.

    Parameters
    ----------
    selector : str
        The selector's name ("plugin", "lscv_h", ...).
    method : str
        "exact" (every pair, or a rule of thumb's exact moments) or "binned".
    n : int
        Rows used.
    grid_size : tuple of int or None
        Nodes per axis of the binned grid (None when exact).
    tolerance : float or None
        The relative error the grid was chosen for (None when exact or when ``grid_size`` was given).
    error_estimate : float or None
        Where the tolerance's grid exceeded the node cap and a coarser grid was used (``method="auto"``,
        with a :class:`parzen.binned.lscv.CoarseGridWarning`): the estimated relative error reached
        (:func:`parzen.bandwidth.binned_matrix.estimated_error`); None otherwise.
    """

    selector: str
    method: str
    n: int
    grid_size: tuple[int, ...] | None = None
    tolerance: float | None = None
    error_estimate: float | None = None


_RECORDS: ContextVar[list[MethodUsed] | None] = ContextVar("parzen_bandwidth_records", default=None)


def report(selector: str, method: str, *, n: int, grid_size=None, tolerance: float | None = None,
           error_estimate: float | None = None) -> None:
    """State what a selector did: an INFO log line, and a record for :func:`recording`.

    Parameters
    ----------
    selector, method, n, grid_size, tolerance, error_estimate
        As in :class:`MethodUsed` (``grid_size`` may be an int: one axis).
    """
    sizes = None if grid_size is None else tuple(int(m) for m in (grid_size if hasattr(grid_size, "__len__")
                                                                   else (grid_size,)))
    used = MethodUsed(selector, method, int(n), sizes, None if sizes is None else tolerance, error_estimate)
    grid = "" if sizes is None else f" on a grid of {' x '.join(map(str, sizes))} nodes" + (
        f" (tolerance {tolerance:g})" if used.tolerance is not None else "") + (
        f" (capped: error about {error_estimate:.2g})" if error_estimate is not None else "")
    logger.info("%s: %s%s, n = %d", selector, method, grid, used.n)
    records = _RECORDS.get()
    if records is not None:
        records.append(used)


@contextlib.contextmanager
def recording() -> Iterator[list[MethodUsed]]:
    """A list that collects the :class:`MethodUsed` of every selector run inside the block.

    Yields
    ------
    list of MethodUsed
        In the order the selectors finished (a selector that calls another reports after it).
    """
    records: list[MethodUsed] = []
    token = _RECORDS.set(records)
    try:
        yield records
    finally:
        _RECORDS.reset(token)
