"""Backends: the only place that knows about hardware.

A backend is a module providing three primitives (paper 000, section 5.1; DESIGN.md),
each taking a keyword ``dtype``:

- ``pair_sum_1d(x, kind, scales)``: for each scale g, sum_{i<j} f_kind((x_i - x_j)/g);
- ``pair_sum_sq(Y, kind, params)``: sums over i<j of functions of |y_i - y_j|^2 for
  whitened rows y, for a vector of parameters at once;
- ``kernel_sum(Z, Q, kind, weights)``: for each query q, sum_i w_i k(|q - z_i|^2).

The statistics (``parzen.bandwidth``, ``parzen.kde``) call only these, through
:func:`get_backend`.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import numpy as np

#: Backend name -> module path.
_REGISTRY = {
    "numpy": "parzen.backends.reference",
    "cpu": "parzen.backends.cpu",
}
#: Order in which ``backend="auto"`` tries them (fastest first).
_AUTO_ORDER = ("cpu", "numpy")


def available() -> list[str]:
    """Names of the backends that import on this machine."""
    names = []
    for name, path in _REGISTRY.items():
        try:
            importlib.import_module(path)
        except ImportError:
            continue
        names.append(name)
    return names


def get_backend(name: str = "auto", dtype=None) -> ModuleType:
    """The backend module for ``name``; "auto" picks the fastest one available.

    ``dtype`` (None, float64 or float32) is checked against what the backend supports.
    """
    if name == "auto":
        usable = available()
        name = next(b for b in _AUTO_ORDER if b in usable)
    if name not in _REGISTRY:
        raise ValueError(
            f"unknown backend {name!r}; choose 'auto' or one of {', '.join(map(repr, _REGISTRY))}"
        )
    module = importlib.import_module(_REGISTRY[name])
    if dtype is not None and np.dtype(dtype) not in module.DTYPES:
        raise ValueError(
            f"backend {name!r} computes in {', '.join(str(t) for t in module.DTYPES)}, "
            f"not {np.dtype(dtype)}; pass dtype=None or choose another backend"
        )
    return module
