"""The warnings one request's work gives, recorded per thread, so that requests can run at once.

``warnings.catch_warnings`` swaps the process's warning filters and ``showwarning`` for the time of
its block and puts them back at its end: two threads in such blocks at once restore each other's
state and record each other's warnings.  :func:`captured` instead installs, while any request is
inside it, one ``showwarning`` that hands each warning to the list of the thread that raised it
(others go where they went before), and one "always" filter ahead of the others (so a warning
repeated at the same place, such as a stale synopsis's, is recorded every time, as
``simplefilter("always")`` inside ``catch_warnings`` did).  Both are removed when the last request
leaves.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

_LOCK = threading.Lock()
_local = threading.local()
_state: dict = {"active": 0, "previous": None, "added": False}
#: The filter entry of ``warnings.filterwarnings("always")``.
_ALWAYS = ("always", None, Warning, None, 0)


def _show(message, category, filename, lineno, file=None, line=None) -> None:
    records = getattr(_local, "records", None)
    if records is not None:
        records.append(message)
        return
    previous = _state["previous"] or warnings._showwarning_orig  # type: ignore[attr-defined]
    previous(message, category, filename, lineno, file, line)


@contextmanager
def captured() -> Iterator[list]:
    """Record the warnings raised in this thread inside the block.

    Yields
    ------
    list
        The warnings' messages (``Warning`` instances), appended as they are raised.
    """
    records: list = []
    outer = getattr(_local, "records", None)
    _local.records = records
    with _LOCK:
        if _state["active"] == 0:
            _state["previous"] = warnings.showwarning
            warnings.showwarning = _show
            _state["added"] = _ALWAYS not in warnings.filters  # one already there stays when the last leaves
            warnings.filterwarnings("always")
        _state["active"] += 1
    try:
        yield records
    finally:
        with _LOCK:
            _state["active"] -= 1
            if _state["active"] == 0:
                if warnings.showwarning is _show:
                    warnings.showwarning = _state["previous"]
                if _state["added"] and _ALWAYS in warnings.filters:
                    warnings.filters.remove(_ALWAYS)  # type: ignore[attr-defined]
                    warnings._filters_mutated()  # type: ignore[attr-defined]
                _state["previous"], _state["added"] = None, False
        _local.records = outer
