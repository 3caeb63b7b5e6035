"""Figures of a fitted KDE (matplotlib, Agg; no pyplot state).

1-D: histogram, density curve and rug, optionally beside the LSCV criterion g(h) of
Andrzejewski et al. (paper 000 in docs/statistics.md), eq. (43).  Needs matplotlib (the ``plot``
extra): importing this module without it raises :class:`parzen.MissingExtraError`.  2-D: filled contours of the density with the points on top.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ._extras import require

require("matplotlib", extra="plot", what="parzen.plotting")

from matplotlib import ticker
from matplotlib.figure import Figure

from ._validate import as_data

#: Evaluation points per axis: 1-D curve, 2-D contour grid.
GRID_1D = 512
GRID_2D = 120


def plot_density(x, kde, path, *, lscv_curve=None, title: str | None = None, label: str | None = None) -> Path:
    """Draw the density ``kde`` (fitted) over the data ``x`` and save it as ``path``.

    Parameters
    ----------
    x : array_like or DataFrame
        The data, 1 or 2 columns, like the data ``kde`` was fitted to.
    kde : parzen.KDE
        A fitted estimator.
    path : str or os.PathLike
        The image file to write (its suffix picks the format, e.g. ``.png``).
    lscv_curve : tuple, optional
        (h_values, g_values, h_opt), h in data units: adds a panel with the LSCV_h criterion g(h) and its minimum
        (1-D only).
    title : str, optional
        The figure's title (default: "Kernel density of" the column names).
    label : str, optional
        Names the bandwidth (default: the selector ``kde`` used, if any).

    Returns
    -------
    pathlib.Path
        The path written.

    Raises
    ------
    ValueError
        When ``x`` has another number of columns than the fit, more than 2 columns, or
        ``lscv_curve`` is given for 2-D data.
    """
    data = as_data(x, name="x")
    if data.d != kde.n_features_in_:
        raise ValueError(f"x has {data.d} column(s) but the KDE was fitted to {kde.n_features_in_}")
    if label is None:
        label = kde.bandwidth if isinstance(kde.bandwidth, str) else "KDE"
    if data.d == 1:
        fig = _plot_1d(data.values[:, 0], kde, lscv_curve, label)
    elif data.d == 2:
        if lscv_curve is not None:
            raise ValueError("lscv_curve is drawn for 1-D data only")
        fig = _plot_2d(data.values, kde, label)
    else:
        raise ValueError(f"plots show 1-D or 2-D data, got {data.d} columns; choose one or two columns")
    names = [str(c) for c in kde.feature_names_in_]
    fig.suptitle(title or f"Kernel density of {' and '.join(names)}")
    path = Path(path)
    fig.savefig(path, dpi=120)
    return path


def _plot_1d(x: np.ndarray, kde, lscv_curve, label: str) -> Figure:
    h = math.sqrt(kde.H_[0, 0])
    grid = np.linspace(x.min() - 3 * h, x.max() + 3 * h, GRID_1D)
    fig = Figure(figsize=(11, 4.2) if lscv_curve is not None else (7, 4.2), layout="constrained")
    ax = fig.add_subplot(1, 2 if lscv_curve is not None else 1, 1)
    ax.hist(x, bins="auto", density=True, color="0.85", edgecolor="white", label="histogram")
    ax.plot(grid, kde.pdf(grid), color="C0", lw=2, label=f"{label}, h = {h:.4g}")
    ax.vlines(x, 0, 0.03, transform=ax.get_xaxis_transform(), color="k", lw=0.5, alpha=min(1.0, 30 / x.size ** 0.5))
    ax.set_xlabel(str(kde.feature_names_in_[0]))
    ax.set_ylabel("density")
    ax.set_ylim(bottom=0)
    ax.legend(frameon=False)
    if lscv_curve is not None:
        _plot_lscv(fig.add_subplot(1, 2, 2), *lscv_curve)
    return fig


def _plot_lscv(ax, h_values, g_values, h_opt: float) -> None:
    """The LSCV_h criterion against the bandwidth h in data units (H = h^2) and the chosen h."""
    ax.plot(h_values, g_values, color="C1", lw=2)
    ax.set_xscale("log")
    ax.xaxis.set_major_locator(ticker.LogLocator(subs=(1, 2, 5)))
    ax.xaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ax.axvline(h_opt, color="k", ls="--", lw=1, label=f"minimum, h = {h_opt:.4g}")
    ax.set_xlabel("h   (the bandwidth, in data units)")
    ax.set_ylabel("LSCV(h)")
    ax.set_title("LSCV criterion", fontsize="medium")
    ax.legend(frameon=False)


def _plot_2d(X: np.ndarray, kde, label: str) -> Figure:
    pad = 3 * np.sqrt(np.diag(kde.H_))
    lo, hi = X.min(axis=0) - pad, X.max(axis=0) + pad
    gx, gy = np.meshgrid(np.linspace(lo[0], hi[0], GRID_2D), np.linspace(lo[1], hi[1], GRID_2D))
    density = kde.pdf(np.column_stack([gx.ravel(), gy.ravel()])).reshape(gx.shape)
    fig = Figure(figsize=(7, 5.6), layout="constrained")
    ax = fig.add_subplot()
    levels = np.linspace(0, density.max(), 13)[1:]  # below the first level stays white
    filled = ax.contourf(gx, gy, density, levels=levels, cmap="Blues", extend="neither")
    ax.scatter(X[:, 0], X[:, 1], s=4, color="k", alpha=float(np.clip(15 / X.shape[0] ** 0.5, 0.05, 0.8)), linewidths=0)
    ax.contour(gx, gy, density, levels=levels, colors="C0", linewidths=0.7, zorder=3)
    fig.colorbar(filled, ax=ax, label="density", format="%.2g")
    H = kde.H_
    ax.set_title(f"{label}: H = [[{H[0, 0]:.3g}, {H[0, 1]:.3g}], [{H[1, 0]:.3g}, {H[1, 1]:.3g}]]", fontsize="medium")
    ax.set_xlabel(str(kde.feature_names_in_[0]))
    ax.set_ylabel(str(kde.feature_names_in_[1]))
    return fig
