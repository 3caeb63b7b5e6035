"""Backends: the only place that knows about hardware.

A backend is an object.  :class:`KDEBackend` declares what the statistics (``parzen.bandwidth``,
``parzen.kde``) call: the pair sums ``pair_sum_1d`` and ``pair_sum_sq``, the KDE sums
``kernel_sum`` and ``log_kernel_sum``, the compute types ``dtypes``, and the prepare hooks
``prepare_pair_sum_1d`` / ``prepare_whitened_pair_sum_sq`` (host versions on the base class,
which the GPU overrides to keep data in its memory), and ``linear_bin`` (the NumPy reference
on the base class; Numba per-thread grids on the cpu, a Triton kernel on the gpu).
:class:`SparseGridBackend` declares the
sparse-grid operators (``parzen.sparsegrid``).  Each comes as "numpy" (the float64 definition
of correct), "cpu" (Numba) and "gpu" (Triton).

:func:`resolve_backend` (and :func:`resolve_sparse_grid_backend`) turn what a user passes
(``"auto"``, a name, or an instance) into an instance, once, where the size of the work is known;
the code below the public entry points receives that instance.
"""

from __future__ import annotations

import importlib
from functools import cache
from types import MappingProxyType

import numpy as np

from .base import KDEBackend, PairSums1D
from .sparse_grid_base import HostDesign, SparseGridBackend

#: Backend name -> (module, KDEBackend class, module, SparseGridBackend class).
_REGISTRY = MappingProxyType({
    "numpy": ("parzen.backends.reference", "NumpyBackend", "parzen.backends.sparse_grid_reference", "NumpySparseGrid"),
    "cpu": ("parzen.backends.cpu", "CpuBackend", "parzen.backends.sparse_grid_cpu", "CpuSparseGrid"),
    "gpu": ("parzen.backends.gpu", "GpuBackend", "parzen.backends.sparse_grid_gpu", "GpuSparseGrid"),
})
#: Order in which ``backend="auto"`` tries them (fastest first).
_AUTO_ORDER = ("gpu", "cpu", "numpy")
#: "auto" takes the GPU only for at least this many kernel evaluations (pairs x scales):
#: below it, launch and transfer overheads exceed what the GPU saves.
GPU_MIN_WORK = 4_000_000

__all__ = (
    "GPU_MIN_WORK",
    "HostDesign",
    "KDEBackend",
    "PairSums1D",
    "SparseGridBackend",
    "available",
    "backend_class",
    "resolve_backend",
    "resolve_sparse_grid_backend",
    "sparse_grid_backend_class",
)


@cache
def available() -> tuple[str, ...]:
    """Names of the backends that import on this machine (checked once per process).

    Returns
    -------
    tuple of str
        A subset of ("numpy", "cpu", "gpu"); "numpy" always.
    """
    names = []
    for name, (path, *_) in _REGISTRY.items():
        try:
            importlib.import_module(path)
        except ImportError:
            continue
        names.append(name)
    return tuple(names)


def backend_class(name: str) -> type[KDEBackend]:
    """The :class:`KDEBackend` subclass registered as ``name`` ("numpy", "cpu", "gpu").

    Raises
    ------
    ValueError
        For an unknown name.
    ImportError
        If the backend does not import here (Numba, or PyTorch/Triton and a GPU, missing).
    """
    path, cls, _, _ = _entry(name)
    return getattr(importlib.import_module(path), cls)


def sparse_grid_backend_class(name: str) -> type[SparseGridBackend]:
    """The :class:`SparseGridBackend` subclass registered as ``name``; see :func:`backend_class`."""
    _, _, path, cls = _entry(name)
    return getattr(importlib.import_module(path), cls)


# One shared default instance per name, made on first use.  The cache is the registry of these
# singletons, not state that changes results: a backend's own mutable state (the GPU's graphs
# and buffers) lives in the instance, and a caller wanting its own passes an instance.
@cache
def _default_backend(name: str) -> KDEBackend:
    return backend_class(name)()


@cache
def _default_sparse_grid_backend(name: str) -> SparseGridBackend:
    return sparse_grid_backend_class(name)()


def resolve_backend(backend: str | KDEBackend = "auto", dtype=None, *, work: float | None = None) -> KDEBackend:
    """The KDE backend instance for ``backend``.

    Parameters
    ----------
    backend : "auto", "numpy", "cpu", "gpu" or KDEBackend
        A name (the shared default instance of that backend), or an instance, returned as is.
        "auto" picks the fastest available backend that computes in ``dtype`` and is worth it
        for ``work``.
    dtype : None, float64 or float32
        Checked against the backend's ``dtypes``.
    work : float, optional
        Kernel evaluations the caller will make: "auto" leaves problems under
        :data:`GPU_MIN_WORK` on the CPU; the GPU qualifies only on a real GPU (not under the
        Triton interpreter).

    Returns
    -------
    KDEBackend

    Raises
    ------
    ValueError
        For an unknown name, or a ``dtype`` the backend does not compute in.
    """
    if isinstance(backend, KDEBackend):
        return _checked(backend, dtype)
    name = _auto_choice(dtype, work) if backend == "auto" else backend
    _entry(name)  # an unknown name raises here
    return _checked(_default_backend(name), dtype)


def resolve_sparse_grid_backend(
    backend: str | SparseGridBackend = "auto", dtype=None, *, work: float | None = None
) -> SparseGridBackend:
    """The sparse-grid backend instance for ``backend``; as :func:`resolve_backend`.

    Returns
    -------
    SparseGridBackend
    """
    if isinstance(backend, SparseGridBackend):
        return _checked(backend, dtype)
    name = _auto_choice(dtype, work) if backend == "auto" else backend
    _entry(name)
    return _checked(_default_sparse_grid_backend(name), dtype)


def _entry(name) -> tuple[str, str, str, str]:
    if not isinstance(name, str) or name not in _REGISTRY:
        raise ValueError(
            f"unknown backend {name!r}; choose 'auto' or one of {', '.join(map(repr, _REGISTRY))}, "
            "or pass a backend instance"
        )
    return _REGISTRY[name]


def _checked(backend, dtype):
    if dtype is not None and np.dtype(dtype) not in backend.dtypes:
        raise ValueError(
            f"backend {backend.name!r} computes in {', '.join(str(t) for t in backend.dtypes)}, "
            f"not {np.dtype(dtype)}; pass dtype=None or choose another backend"
        )
    return backend


def _auto_choice(dtype, work: float | None) -> str:
    """The first backend of ``_AUTO_ORDER`` that imports, computes in ``dtype`` and is worth it."""
    wanted = None if dtype is None else np.dtype(dtype)
    for name in _AUTO_ORDER:
        if name not in available() or (name == "gpu" and not _gpu_worth_it(work)):
            continue
        if wanted is None or wanted in _default_backend(name).dtypes:
            return name
    raise ValueError(
        f"no available backend computes in {wanted}; pass dtype=None (float64) or dtype='float32'"
    )


def _gpu_worth_it(work: float | None) -> bool:
    return not backend_class("gpu").interpreted and (work is None or work >= GPU_MIN_WORK)  # type: ignore[attr-defined]
