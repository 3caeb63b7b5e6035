"""Backends: the only place that knows about hardware.

A backend is a module providing these primitives (the first three: paper 000, section 5.1;
DESIGN.md), each taking a keyword ``dtype`` (None: the first of the module's ``DTYPES``):

- ``pair_sum_1d(x, kind, scales)``: for each scale g, sum_{i<j} f_kind((x_i - x_j)/g);
- ``pair_sum_sq(Y, kind, params)``: sums over i<j of functions of |y_i - y_j|^2 for
  whitened rows y, for a vector of parameters at once;
- ``kernel_sum(Z, Q, kind, weights)``: for each query q, sum_i w_i k(|q - z_i|^2);
- ``log_kernel_sum(Z, Q, kind, weights)``: its logarithm, by log-sum-exp where the sum can
  underflow (the Gaussian far from the data; :func:`parzen.backends.reference.log_kernel_sum`).

A backend may also provide ``prepare_pair_sum_1d(x)`` (a :class:`PairSums1D`, x kept on the
device; :func:`prepared_pair_sum_1d` falls back to ``pair_sum_1d``) and
``prepare_whitened_pair_sum_sq(Z, kind)``, returning a function
(M, params) -> ``pair_sum_sq(Z M^-T, kind, params)`` (or None where it cannot) that keeps Z where the backend computes
(the GPU's memory) across the calls of an optimiser; :func:`whitened_pair_sum_sq` supplies
the host version for the others.

The statistics (``parzen.bandwidth``, ``parzen.kde``) call only these, through
:func:`get_backend`.
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from functools import cache
from types import ModuleType

import numpy as np
from scipy import linalg

#: Backend name -> module path.
_REGISTRY = {
    "numpy": "parzen.backends.reference",
    "cpu": "parzen.backends.cpu",
    "gpu": "parzen.backends.gpu",
}
#: Order in which ``backend="auto"`` tries them (fastest first).
_AUTO_ORDER = ("gpu", "cpu", "numpy")
#: "auto" takes the GPU only for at least this many kernel evaluations (pairs x scales):
#: below it, launch and transfer overheads exceed what the GPU saves.
GPU_MIN_WORK = 4_000_000


@cache
def available() -> tuple[str, ...]:
    """Names of the backends that import on this machine (checked once per process)."""
    names = []
    for name, path in _REGISTRY.items():
        try:
            importlib.import_module(path)
        except ImportError:
            continue
        names.append(name)
    return tuple(names)


def get_backend(name: str = "auto", dtype=None, *, work: float | None = None) -> ModuleType:
    """The backend module for ``name``; "auto" picks the fastest one available.

    ``dtype`` (None, float64 or float32) is checked against what the backend supports.
    ``work`` (kernel evaluations the call will make) lets "auto" leave small problems on the
    CPU; the GPU backend qualifies only on a real GPU (not under the Triton interpreter).
    """
    if name == "auto":
        name = _auto_choice(dtype, work)
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


def whitened_pair_sum_sq(backend: ModuleType, Z: np.ndarray, kind: str, *, dtype=None):
    """A function (M, params) -> ``backend.pair_sum_sq`` over the rows y = M^-1 z of Z.

    M is lower triangular.  Uses the backend's own ``prepare_whitened_pair_sum_sq`` when it
    has one that accepts Z (it returns None otherwise); else whitens on the host, once per M.
    """
    prepare = getattr(backend, "prepare_whitened_pair_sum_sq", None)
    prepared = None if prepare is None else prepare(Z, kind, dtype=dtype)
    if prepared is not None:
        return prepared
    last: dict[str, np.ndarray | None] = {"M": None, "Y": None}

    def sums(M: np.ndarray, params) -> np.ndarray:
        if last["M"] is None or not np.array_equal(M, last["M"]):
            last.update(M=np.array(M, dtype=np.float64), Y=linalg.solve_triangular(M, Z.T, lower=True).T)
        return backend.pair_sum_sq(last["Y"], kind, params, dtype=dtype)

    return sums


class PairSums1D:
    """1-D pair sums over one data set, for the stages of one computation (PLUGIN's two).

    ``sum(kind, g)`` is sum_{i<j} f_kind((x_i - x_j) / g) for one scale g, as a number that
    arithmetic can continue from: a float here, a 0-d device tensor on the GPU, so that a scale
    computed from an earlier sum (PLUGIN's g2 from Psi_6) never waits for the device.
    :meth:`evaluate` runs a whole chain of such stages and returns its numbers as floats.
    """

    def __init__(self, pair_sum: Callable) -> None:
        self.sum = pair_sum

    def evaluate(self, chain: Callable, *args) -> tuple[float, ...]:
        """``chain(self.sum, *args)`` (a tuple of numbers computed from the sums by plain
        arithmetic), as floats.  Backends may run it their own way: the GPU queues it without
        waiting and, from the second call of the same chain, integer arguments and data size,
        replays it as one CUDA graph (float arguments are its inputs)."""
        return tuple(float(v) for v in chain(self.sum, *args))


def prepared_pair_sum_1d(backend: ModuleType, x: np.ndarray, *, dtype=None) -> PairSums1D:
    """:class:`PairSums1D` over x: the backend's own ``prepare_pair_sum_1d`` when it has one that
    accepts x (the GPU keeps x sorted in its memory), else ``pair_sum_1d`` at each call."""
    prepare = getattr(backend, "prepare_pair_sum_1d", None)
    prepared = None if prepare is None else prepare(x, dtype=dtype)
    if prepared is not None:
        return prepared
    return PairSums1D(lambda kind, g: float(backend.pair_sum_1d(x, kind, np.array([float(g)]), dtype=dtype)[0]))


def log_sum_exp_of_parts(top: np.ndarray, total: np.ndarray) -> np.ndarray:
    """log sum_c total_c exp(top_c) over axis 0: one query's log-sum-exp from its parts.

    Each part c (a chunk of data) holds its largest exponent ``top_c`` and the sum ``total_c`` of
    exp(e_i - top_c) over its terms; a part with ``total_c`` = 0 (no terms) is left out, and a query
    with no terms at all gets -inf.  Computed in float64.
    """
    top, total = np.asarray(top, dtype=np.float64), np.asarray(total, dtype=np.float64)
    present = total > 0
    top = np.where(present, top, -np.inf)
    best = top.max(axis=0)
    shift = np.where(np.isfinite(best), best, 0.0)
    with np.errstate(divide="ignore"):
        return best + np.log((np.where(present, total, 0.0) * np.exp(top - shift)).sum(axis=0))


def log_of_kernel_sum(kernel_sum: Callable, Z: np.ndarray, Q: np.ndarray, kind: str, weights, *, dtype=None):
    """log sum_i w_i k(|q - z_i|^2) for a compactly supported kernel, from ``kernel_sum``.

    Their profiles are at least ~1e-15 wherever they are not 0 (biweight (1 - s)^2 with s one
    float32 rounding below 1), so with the weights divided by the largest (added back as its log)
    no term underflows unless the weights span more than ~1e-20 (float32) or ~1e-290 (float64)
    of each other; the log is -inf exactly where every term is 0 (outside the kernel's reach),
    where the density is 0.
    """
    w = np.ones(len(Z)) if weights is None else np.asarray(weights, dtype=np.float64)
    largest = float(w.max()) if w.size else 0.0
    if largest <= 0.0:
        return np.full(len(Q), -np.inf)
    sums = np.asarray(kernel_sum(Z, Q, kind, w / largest, dtype=dtype), dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.log(sums) + math.log(largest)


def _auto_choice(dtype, work: float | None) -> str:
    """The first backend of ``_AUTO_ORDER`` that imports, computes in ``dtype`` and is worth it."""
    wanted = None if dtype is None else np.dtype(dtype)
    for name in _AUTO_ORDER:
        if name not in available() or (name == "gpu" and not _gpu_worth_it(work)):
            continue
        if wanted is None or wanted in importlib.import_module(_REGISTRY[name]).DTYPES:
            return name
    raise ValueError(
        f"no available backend computes in {wanted}; pass dtype=None (float64) or dtype='float32'"
    )


def _gpu_worth_it(work: float | None) -> bool:
    module = importlib.import_module(_REGISTRY["gpu"])
    return not module.INTERPRETED and (work is None or work >= GPU_MIN_WORK)
