"""Bandwidth selectors, written once against the backend primitives.

- rules of thumb: :func:`scott`, :func:`silverman`, :func:`normal_scale`;
- :func:`plugin`: two-stage direct plug-in (univariate);
- :func:`plugin_cdf`: the plug-in bandwidth of the kernel distribution function (univariate);
- :func:`isj`: the improved Sheather-Jones fixed point of Botev et al. (univariate, binned DCT);
- :func:`lscv_h`, :func:`lscv_H`, :func:`lscv_diag`: least-squares cross-validation,
  with their criteria :func:`lscv_h_objective` and :func:`lscv_H_objective`, and LSCV_h's
  multiplier of Sigma, :func:`lscv_h_factor`;
- :func:`plugin_H`, :func:`plugin_diag`: multivariate plug-in matrices (R ``ks::Hpi``,
  ``ks::Hpi.diag``), and :func:`scv_H`: smoothed cross-validation (``ks::Hscv``), exact.

Every selector returns the bandwidth in data units: a float h for 1-D data (the kernel's
standard deviation), a d x d matrix H otherwise (the kernel's covariance); see
:mod:`parzen.bandwidth.convention`.  :data:`SELECTORS` registers them by name
(:mod:`parzen.bandwidth.registry`) for ``KDE``, the command line and AQP; :func:`selection` runs
one and says how it computed (exact or binned, the grid: :mod:`parzen.bandwidth.method`).  Every
selector takes data served in chunks (:class:`parzen.binned.ChunkedData`: Parquet datasets,
DuckDB tables, ...; :func:`isj` with ``count="rows"``) as well as arrays, and bins them.
"""

from .convention import bandwidth_matrix
from .distribution import plugin_cdf
from .isj import isj
from .lscv import (
    CostWarning,
    LSCVWarning,
    lscv_diag,
    lscv_H,
    lscv_h,
    lscv_h_factor,
    lscv_H_objective,
    lscv_h_objective,
    lscv_method,
    predicted_evaluations,
    reference_h0,
)
from .method import METHODS, MethodUsed, choose_method
from .plugin import PluginStages, plugin, plugin_stages, psi_functional
from .plugin_matrix import plugin_diag, plugin_H
from .registry import SELECTORS, Selection, Selector, default_selector, select, selection
from .rules import normal_scale, scott, silverman
from .scv import scv_H

__all__ = [
    "METHODS",
    "SELECTORS",
    "CostWarning",
    "LSCVWarning",
    "MethodUsed",
    "PluginStages",
    "Selection",
    "Selector",
    "bandwidth_matrix",
    "choose_method",
    "default_selector",
    "isj",
    "lscv_H",
    "lscv_H_objective",
    "lscv_diag",
    "lscv_h",
    "lscv_h_factor",
    "lscv_h_objective",
    "lscv_method",
    "normal_scale",
    "plugin",
    "plugin_H",
    "plugin_cdf",
    "plugin_diag",
    "plugin_stages",
    "predicted_evaluations",
    "psi_functional",
    "reference_h0",
    "scott",
    "scv_H",
    "select",
    "selection",
    "silverman",
]
