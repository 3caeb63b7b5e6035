"""Bandwidth selectors, written once against the backend primitives.

- rules of thumb: :func:`scott`, :func:`silverman`, :func:`normal_scale`;
- :func:`plugin`: two-stage direct plug-in (univariate);
- :func:`lscv_h`, :func:`lscv_H`, :func:`lscv_diag`: least-squares cross-validation,
  with their criteria :func:`lscv_h_objective` and :func:`lscv_H_objective`.
"""

from .lscv import (
    CostWarning,
    LSCVWarning,
    lscv_diag,
    lscv_H,
    lscv_h,
    lscv_H_objective,
    lscv_h_objective,
    predicted_evaluations,
    reference_h0,
)
from .plugin import PluginStages, plugin, plugin_stages, psi_functional
from .rules import normal_scale, scott, silverman

__all__ = [
    "CostWarning",
    "LSCVWarning",
    "PluginStages",
    "lscv_H",
    "lscv_H_objective",
    "lscv_diag",
    "lscv_h",
    "lscv_h_objective",
    "normal_scale",
    "plugin",
    "plugin_stages",
    "predicted_evaluations",
    "psi_functional",
    "reference_h0",
    "scott",
    "silverman",
]
