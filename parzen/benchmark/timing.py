"""Wall-clock timing: a first call on its own, then the median of repeated calls, in a budget.

The first call pays for Numba's JIT compilation (or loading its cache), imports and warm
caches, so it is reported separately and left out of the median.  A measurement may spend
``max_seconds`` in all: repeats stop once the budget is spent (at least one is made), and a
first call that takes over half the budget is the only sample (it then says so).  The same
rule runs inside R for the R peers (:mod:`parzen.benchmark.rpeers`).
"""

from __future__ import annotations

import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Timing:
    """Seconds of the first call and of the timed calls, and the value computed.

    Parameters
    ----------
    first : float
        Seconds of the first call.
    samples : tuple of float
        Seconds of the timed calls.
    value : object
        The call's result.
    first_only : bool, default False
        The first call was too slow to repeat and is the only sample.
    warnings : tuple of str, default ()
        The call's warnings, once each.
    """

    first: float
    samples: tuple[float, ...]
    value: Any
    first_only: bool = False  # the first call was too slow to repeat and is the only sample
    warnings: tuple[str, ...] = ()

    @property
    def median(self) -> float:
        """The median of the samples, in seconds."""
        return statistics.median(self.samples)


def first_call_suffices(first: float, max_seconds: float | None) -> bool:
    """The budget rule: a first call over half the budget is not repeated.

    Parameters
    ----------
    first : float
        Seconds of the first call.
    max_seconds : float or None
        The budget; None: none.

    Returns
    -------
    bool
    """
    return max_seconds is not None and first > max_seconds / 2


def measure(call: Callable[[], Any], repeat: int, max_seconds: float | None) -> Timing:
    """Time ``call()``: once, then up to ``repeat`` times while ``max_seconds`` lasts.

    Warnings raised by the call are collected (once each), not shown; deprecation notices
    (FutureWarning, DeprecationWarning) are dropped.

    Parameters
    ----------
    call : callable
        The zero-argument call to time.
    repeat : int
        The most timed calls after the first.
    max_seconds : float or None
        The budget of the whole measurement; None: none.

    Returns
    -------
    Timing
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        value = call()
        first = time.perf_counter() - start
        first_only = first_call_suffices(first, max_seconds)
        if first_only:
            samples = [first]
        else:
            samples, spent = [], first
            while len(samples) < repeat and (not samples or max_seconds is None or spent < max_seconds):
                start = time.perf_counter()
                value = call()
                samples.append(time.perf_counter() - start)
                spent += samples[-1]
    notices = (FutureWarning, DeprecationWarning, PendingDeprecationWarning)
    messages = tuple(dict.fromkeys(str(w.message).split(";")[0] for w in caught if not issubclass(w.category, notices)))
    return Timing(first, tuple(samples), value, first_only, messages)


def predicted_seconds(previous: tuple[int, float] | None, n: int) -> float | None:
    """A run time at size n from one at a smaller size, for O(n^2) work (pair sums, n = m KDE).

    Used only to decide to skip a measurement that would exceed the budget, never reported
    as a result.

    Parameters
    ----------
    previous : tuple or None
        (n, seconds) measured at a smaller size, or None.
    n : int
        The size to predict.

    Returns
    -------
    float or None
        seconds * (n / n_previous)^2, or None without a previous measurement.
    """
    if previous is None:
        return None
    n_prev, seconds = previous
    return seconds * (n / n_prev) ** 2
