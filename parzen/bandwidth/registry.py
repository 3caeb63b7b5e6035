"""The registry of bandwidth selectors: the names ``KDE(bandwidth=...)``, the ``parzen`` command
line (``--method``) and AQP's synopsis builds accept, and what each selector supports.

Every registered selector follows :mod:`parzen.bandwidth.convention` (a float h for 1-D data,
a d x d matrix H otherwise); :func:`select` runs one by name after checking that it supports
the data's dimension and weights.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .._validate import as_data
from ..binned.source import as_chunked
from .isj import isj
from .lscv import lscv_diag, lscv_H, lscv_h
from .method import recording
from .plugin import plugin
from .plugin_matrix import plugin_diag, plugin_H
from .rules import normal_scale, scott, silverman
from .scv import scv_H

#: The name that picks :func:`default_selector` for the data.
AUTO = "auto"
#: The forms of H for d > 1, most flexible first: a full matrix, a diagonal one, a multiple of
#: the sample covariance Sigma.
FORMS = ("full", "diagonal", "sigma")


@dataclass(frozen=True)
class Selector:
    """One registered bandwidth selector.

    Parameters
    ----------
    name : str
        The name users give (``KDE(bandwidth=name)``, ``parzen bandwidth --method name``).
    function : callable
        ``function(X, **options)``: the bandwidth in data units, a float for 1-D data and a
        d x d matrix otherwise.
    description : str
        One line: what it computes.
    form : str or None
        The form of its matrix H for d > 1, one of :data:`FORMS`; None for a univariate selector.
    max_d : int or None, default None
        The most columns it supports (None: any number).
    weighted : bool, default False
        Whether it takes ``weights=``.
    """

    name: str
    function: Callable[..., float | np.ndarray]
    description: str
    form: str | None
    max_d: int | None = None
    weighted: bool = False
    options: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        if (self.form is None) != (self.max_d == 1) or self.form not in (*FORMS, None):
            raise ValueError(f"selector {self.name!r}: form {self.form!r} does not fit max_d={self.max_d!r}")
        keywords = inspect.signature(self.function).parameters
        object.__setattr__(self, "options", frozenset(k for k, p in keywords.items() if p.kind is p.KEYWORD_ONLY))

    def supports(self, d: int) -> bool:
        """Whether it selects a bandwidth for ``d``-column data."""
        return self.max_d is None or d <= self.max_d


SELECTORS: dict[str, Selector] = {
    s.name: s
    for s in (
        Selector("plugin", plugin, "two-stage direct plug-in (Sheather & Jones), univariate", None, max_d=1, weighted=True),
        Selector("lscv_h", lscv_h, "least-squares cross-validation over H = h^2 Sigma", "sigma", weighted=True),
        Selector("lscv_H", lscv_H, "least-squares cross-validation over full matrices H", "full", weighted=True),
        Selector("lscv_diag", lscv_diag, "least-squares cross-validation over diagonal H", "diagonal", weighted=True),
        Selector("plugin_H", plugin_H, "multivariate plug-in over full matrices H, as R ks::Hpi", "full", weighted=True),
        Selector("plugin_diag", plugin_diag, "multivariate plug-in over diagonal H, as R ks::Hpi.diag", "diagonal", weighted=True),
        Selector("scv_H", scv_H, "smoothed cross-validation over full matrices H, as R ks::Hscv", "full", weighted=True),
        Selector("scott", scott, "Scott's rule of thumb, n^(-2/(d+4)) Sigma", "sigma", weighted=True),
        Selector("silverman", silverman, "Silverman's rule of thumb (robust spread in 1-D)", "sigma", weighted=True),
        Selector("normal_scale", normal_scale, "normal-scale rule, AMISE-optimal for normal data", "sigma", weighted=True),
        Selector("isj", isj, "improved Sheather-Jones (Botev et al. 2010), univariate, for multimodal data", None,
                 max_d=1),
    )
}
"""The registered selectors by name, in the order they are listed to users: the names
``KDE(bandwidth=...)``, ``parzen bandwidth --method`` and ``Engine.build(bandwidth=...)`` accept."""


def default_selector(d: int) -> str:
    """The selector ``"auto"`` stands for: ``"plugin"`` for 1-D data, ``"normal_scale"`` otherwise.

    Parameters
    ----------
    d : int
        Columns of the data.

    Returns
    -------
    str
        A key of :data:`SELECTORS`.
    """
    return "plugin" if d == 1 else "normal_scale"


def select(name: str, X, *, weights=None, **options) -> float | np.ndarray:
    """The bandwidth of the registered selector ``name`` for the data X, in data units.

    Parameters
    ----------
    name : str
        A key of :data:`SELECTORS`.
    X : array_like of shape (n,) or (n, d), or ChunkedData
        The sample (NumPy, pandas, polars or a validated ``Data``), or data served in chunks
        (:class:`parzen.binned.ParquetData`, :class:`parzen.binned.DuckDBData`, ...), which every
        selector takes (binned; isj with ``count="rows"`` only).
    weights : array_like of shape (n,), optional
        Weights of the rows, for the selectors that take them (``Selector.weighted``).
    **options
        Keyword arguments (``backend``, ``dtype``, ``progress``, ``scale``, ``method``, ...);
        each is passed on when the selector takes it (``Selector.options``) and left out
        otherwise: a rule of thumb sums no pairs, so it has no backend.

    Returns
    -------
    float or ndarray of shape (d, d)
        h for 1-D data, H otherwise (:mod:`parzen.bandwidth.convention`).

    Raises
    ------
    ValueError
        If ``name`` is not registered, the selector does not support X's number of columns, or
        weights are given to one defined for unweighted data.
    """
    if name not in SELECTORS:
        raise ValueError(f"unknown bandwidth {name!r}; choose one of {', '.join(map(repr, SELECTORS))}")
    selector = SELECTORS[name]
    data = as_chunked(X) or as_data(X)
    if not selector.supports(data.d):
        what = "univariate" if selector.max_d == 1 else f"for at most {selector.max_d} columns"
        usable = [repr(n) for n, other in _by_flexibility() if other.supports(data.d)]
        raise ValueError(f"bandwidth={name!r} is {what} but X has {data.d} columns; use {_either(usable)}")
    if weights is not None:
        if not selector.weighted:
            usable = [*(repr(n) for n, other in SELECTORS.items() if other.weighted), "a numeric bandwidth"]
            raise ValueError(f"bandwidth={name!r} is defined for unweighted data; with weights use {_either(usable)}")
        options["weights"] = weights
    return selector.function(data, **{k: v for k, v in options.items() if k in selector.options})


@dataclass(frozen=True)
class Selection:
    """A bandwidth with how it was computed (:func:`selection`).

    Parameters
    ----------
    name : str
        The selector.
    value : float or numpy.ndarray
        Its answer: h for 1-D data, H otherwise (:mod:`parzen.bandwidth.convention`).
    method : str
        "exact" or "binned" (what ``method="auto"`` chose; a rule of thumb is "exact" from the
        moments, silverman's quartiles of data served in chunks "binned").
    grid_size : tuple of int or None
        Nodes per axis of the binned grid (None when exact).
    tolerance : float or None
        The relative error the grid was chosen for (None when exact or ``grid_size`` was given).
    n : int
        Rows used (the effective number for weighted rules of thumb).
    seconds : float
        Wall-clock time of the selection.
    error_estimate : float or None
        The estimated relative error where the tolerance's grid exceeded the node cap and a coarser
        one was used (:attr:`parzen.bandwidth.method.MethodUsed.error_estimate`); None otherwise.
    """

    name: str
    value: float | np.ndarray
    method: str
    grid_size: tuple[int, ...] | None
    tolerance: float | None
    n: int
    seconds: float
    error_estimate: float | None = None


def selection(name: str, X, *, weights=None, **options) -> Selection:
    """:func:`select`, with the method used, the grid, the rows and the time.

    The method is what the selector itself reported (:func:`parzen.bandwidth.method.report`,
    also an INFO line on the logger ``"parzen.bandwidth"``); a selector that calls another (lscv_h
    calls lscv_h_factor) is described by the last report.

    Parameters
    ----------
    name, X, weights, **options
        As in :func:`select` (``"auto"`` is not a name here: use :func:`default_selector`).

    Returns
    -------
    Selection

    Raises
    ------
    ValueError
        As :func:`select`.
    """
    with recording() as records:
        start = time.perf_counter()
        value = select(name, X, weights=weights, **options)
        seconds = time.perf_counter() - start
    used = records[-1]
    return Selection(name, value, used.method, used.grid_size, used.tolerance, used.n, seconds, used.error_estimate)


def _by_flexibility() -> list[tuple[str, Selector]]:
    """The selectors of matrices, the most flexible form first (:data:`FORMS`)."""
    return sorted(((n, s) for n, s in SELECTORS.items() if s.form), key=lambda item: FORMS.index(str(item[1].form)))


def _either(items: list[str]) -> str:
    """The items joined as "a, b or c"."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"
