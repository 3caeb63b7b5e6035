"""parzen: fast kernel density estimation, exact bandwidth selection and
density-based approximate query processing.

>>> from parzen import KDE, bandwidth
>>> h = bandwidth.plugin(x)                 # two-stage direct plug-in
>>> kde = KDE(bandwidth="lscv_H").fit(X)   # full bandwidth matrix by LSCV
>>> kde.pdf(Q)

``import parzen`` loads NumPy, SciPy, Numba and threadpoolctl only (not pandas).  The approximate query engine
(``parzen.aqp``), the figures (``parzen.plotting``) and the GPU backend need the extras ``aqp``,
``plot`` and ``gpu``; without them they raise :class:`MissingExtraError`, which names the
``pip install "parzen[...]"`` command.
"""

from . import bandwidth
from ._extras import MissingExtraError
from ._validate import TiedDataWarning
from .bandwidth import CostWarning, LSCVWarning
from .kde import KDE

__version__ = "0.1.0"

__all__ = ["KDE", "CostWarning", "LSCVWarning", "MissingExtraError", "TiedDataWarning", "__version__", "bandwidth"]
