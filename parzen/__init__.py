"""parzen: fast kernel density estimation, exact bandwidth selection and
density-based approximate query processing.

>>> from parzen import KDE, bandwidth
>>> h = bandwidth.plugin(x)                 # two-stage direct plug-in
>>> kde = KDE(bandwidth="lscv_H").fit(X)   # full bandwidth matrix by LSCV
>>> kde.pdf(Q)

``import parzen`` imports nothing heavy: the names below are loaded on first use (PEP 562's
module ``__getattr__``), so a command or a script pays only for the parts it touches.  ``KDE`` and
the selectors need NumPy, SciPy, Numba and threadpoolctl (not pandas).  The approximate query
engine (``parzen.aqp``), the figures (``parzen.plotting``) and the GPU backend need the extras
``aqp``, ``plot`` and ``gpu``; without them they raise :class:`MissingExtraError`, which names the
``pip install "parzen[...]"`` command.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

#: Public name -> (module, attribute of it, or None for the module itself), imported on first use.
_LAZY = {
    "KDE": ("parzen.kde", "KDE"),
    "CostWarning": ("parzen.bandwidth.lscv", "CostWarning"),
    "LSCVWarning": ("parzen.bandwidth.lscv", "LSCVWarning"),
    "MissingExtraError": ("parzen._extras", "MissingExtraError"),
    "TiedDataWarning": ("parzen._validate", "TiedDataWarning"),
    "bandwidth": ("parzen.bandwidth", None),
}

__all__ = ["KDE", "CostWarning", "LSCVWarning", "MissingExtraError", "TiedDataWarning", "__version__", "bandwidth"]

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ imports these on first use
    from . import bandwidth
    from ._extras import MissingExtraError
    from ._validate import TiedDataWarning
    from .bandwidth.lscv import CostWarning, LSCVWarning
    from .kde import KDE


def __getattr__(name: str):
    """Import a public name of :data:`_LAZY` on first use and keep it in the module (PEP 562)."""
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'parzen' has no attribute {name!r}") from None
    value = importlib.import_module(module)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
