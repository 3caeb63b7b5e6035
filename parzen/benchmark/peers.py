"""The peers a user would otherwise call, one small adapter each.

An adapter times the peer on a :class:`~parzen.benchmark.problems.Case` and returns its result
in parzen's terms (:func:`~parzen.benchmark.problems.comparable`): a bandwidth in data units,
per-column bandwidths, a bandwidth matrix or densities at the case's queries.  A peer whose
library is missing is skipped with the reason (:meth:`Peer.missing`); R's are in
:mod:`parzen.benchmark.rpeers`.

For KDE all peers get the case's bandwidth matrix H: SciPy as H = f^2 Sigma (its own form),
the others on data whitened by the Cholesky factor L of H with bandwidth 1 (the density is then
divided by |L|), which is what a user of an isotropic-only library has to do.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import linalg

from .. import bandwidth
from . import rpeers
from .problems import LSCV_H_OBJECTIVE, Case
from .timing import Timing, measure

#: Notes on a whole problem, for the report.
PROBLEM_NOTES = {
    "PLUGIN": "statsmodels, SciPy, scikit-learn and KDEpy have no plug-in selector (their 'normal_reference', "
    "'scott', 'silverman' are rules of thumb); the only rivals are R's KernSmooth::dpik and ks::hpi, which bin "
    "the data on 401 grid points: approximate, shown with their relative error against the exact h.",
    LSCV_H_OBJECTIVE: "No peer exposes one evaluation of the LSCV_H criterion; the whole selection (LSCV_H) is "
    "compared with ks::Hlscv and statsmodels.",
}


@dataclass(frozen=True)
class Peer:
    """A peer's computation of one problem.

    Parameters
    ----------
    name : str
        The implementation's name in the report.
    problem : str
        The problem title it computes (a value of :data:`parzen.benchmark.problems.PROBLEMS`).
    exact : bool
        No binning, grid or series: the same quantity up to rounding (or a criterion caveat).
    caveat : str
        How it differs from parzen's computation, for the report's notes.
    requires : str
        The Python module it imports, or "R".
    run : callable
        (case, repeat, max_seconds) -> :class:`~parzen.benchmark.timing.Timing` with the value.
    dims : tuple of int, optional
        The dimensions it handles; None: any.
    counterpart : callable, optional
        parzen's value of what it computes, when that is not the case's own problem.
    comparable : bool, default True
        False: it computes something else (its own bandwidth); no relative difference is shown.
    """

    name: str
    problem: str
    exact: bool  # no binning, grid or series: the same quantity up to rounding (or a criterion caveat)
    caveat: str  # how it differs from parzen's computation
    requires: str  # the Python module it imports, or "R"
    run: Callable[[Case, int, float | None], Timing]  # (case, repeat, max_seconds) -> timing and value
    dims: tuple[int, ...] | None = None  # the d it handles; None: any
    counterpart: Callable[[Case], Any] | None = None  # parzen's value of what it computes, if not the case's
    comparable: bool = True  # False: it computes something else (its own bandwidth); no relative difference

    def missing(self) -> str | None:
        """Why it cannot run here.

        Returns
        -------
        str or None
            The reason (its library or R is missing), or None when it can run.
        """
        if self.requires == "R":
            return rpeers.missing()
        if importlib.util.find_spec(self.requires) is None:
            return f'{self.requires} is not installed (pip install "parzen[bench]")'
        return None

    def applies(self, problem: str, d: int) -> bool:
        """Whether it computes ``problem`` in ``d`` dimensions.

        Parameters
        ----------
        problem : str
            A problem title.
        d : int
            The dimension.

        Returns
        -------
        bool
        """
        return problem == self.problem and (self.dims is None or d in self.dims)


def _timed(factory: Callable[[Case], Callable[[], Any]]) -> Callable[[Case, int, float | None], Timing]:
    """An adapter from a factory of the zero-argument call to time."""
    return lambda case, repeat, max_seconds: measure(factory(case), repeat, max_seconds)


def _r(name: str, problem: str, expression: str, *, exact: bool, caveat: str, **options) -> Peer:
    """A peer computed by the R expression (of ``x``, the data; see :mod:`.rpeers`)."""
    return Peer(name, problem, exact, caveat, "R", rpeers.timed(expression), **options)


def _kde_inputs(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """(Q, H) of a KDE case: its queries and bandwidth matrix."""
    if case.Q is None or case.H is None:
        raise ValueError(f"a {case.problem} case has no queries Q or bandwidth H (KDE peers need both)")
    return case.Q, case.H


def _whitened(case: Case) -> tuple[np.ndarray, np.ndarray, float]:
    """(Z, Qz, |L|): data and queries as rows z = L^-1 x, L L^T = H, so the bandwidth is 1."""
    queries, H = _kde_inputs(case)
    L = linalg.cholesky(H, lower=True)
    X, Q = (np.reshape(a, (len(a), -1)) for a in (case.X, queries))
    Z, Qz = (linalg.solve_triangular(L, a.T, lower=True).T for a in (X, Q))
    return Z, Qz, float(np.prod(np.diag(L)))


# --- LSCV ------------------------------------------------------------------------------


def _statsmodels_cv_ls(case: Case) -> Callable[[], np.ndarray]:
    from statsmodels.nonparametric.kernel_density import KDEMultivariate

    def call() -> np.ndarray:
        bw = KDEMultivariate(case.X, var_type="c" * case.d, bw="cv_ls").bw
        return bw if case.problem == "LSCV_h" else np.diag(bw**2)

    return call


_CV_LS_CAVEAT = (
    "optimises a diagonal H = diag(bw^2) with the leave-one-out term over n(n-1): a related, not identical, "
    "criterion; compared as {}"
)

# --- KDE -------------------------------------------------------------------------------


def _scipy_kde(case: Case) -> Callable[[], np.ndarray]:
    from scipy.stats import gaussian_kde

    queries, H = _kde_inputs(case)
    factor = float(np.sqrt(H[0, 0] / case.sigma[0, 0]))  # H = factor^2 Sigma
    X, Q = np.atleast_2d(case.X.T), np.atleast_2d(queries.T)
    return lambda: gaussian_kde(X, bw_method=factor)(Q)


def _sklearn_kde(case: Case) -> Callable[[], np.ndarray]:
    from sklearn.neighbors import KernelDensity

    def call() -> np.ndarray:
        Z, Qz, det = _whitened(case)
        tree = KernelDensity(kernel="gaussian", bandwidth=1.0, rtol=0.0, atol=0.0, algorithm="auto").fit(Z)
        return np.exp(tree.score_samples(Qz)) / det

    return call


def _statsmodels_kde(case: Case) -> Callable[[], np.ndarray]:
    from statsmodels.nonparametric.kernel_density import KDEMultivariate

    def call() -> np.ndarray:
        Z, Qz, det = _whitened(case)
        return KDEMultivariate(Z, var_type="c" * case.d, bw=np.ones(case.d)).pdf(Qz) / det

    return call


def _statsmodels_fft(case: Case) -> Callable[[], np.ndarray]:
    from statsmodels.nonparametric.kde import KDEUnivariate

    Q, H = _kde_inputs(case)

    def call() -> np.ndarray:
        kde = KDEUnivariate(case.X)
        kde.fit(kernel="gau", bw=float(np.sqrt(H[0, 0])), fft=True)
        return np.interp(Q, kde.support, kde.density)

    return call


def _kdepy_naive(case: Case) -> Callable[[], np.ndarray]:
    from KDEpy import NaiveKDE

    def call() -> np.ndarray:
        Z, Qz, det = _whitened(case)
        return NaiveKDE(kernel="gaussian", bw=1.0).fit(Z).evaluate(Qz) / det

    return call


#: Grid of KDEpy's FFTKDE per dimension (d = 1, d = 2).
FFT_GRID = {1: 2**12, 2: 256}


def _kdepy_fft(case: Case) -> Callable[[], np.ndarray]:
    from KDEpy import FFTKDE
    from scipy.interpolate import RegularGridInterpolator

    def call() -> np.ndarray:
        Z, Qz, det = _whitened(case)
        size = FFT_GRID[case.d]
        grid, values = FFTKDE(kernel="gaussian", bw=1.0).fit(Z).evaluate((size,) * case.d)
        if case.d == 1:
            return np.interp(Qz[:, 0], grid, values) / det
        axes = [np.unique(grid[:, k]) for k in range(case.d)]
        surface = RegularGridInterpolator(axes, values.reshape((size,) * case.d), bounds_error=False, fill_value=0.0)
        return surface(Qz) / det

    return call


def _kdepy_isj(case: Case) -> Callable[[], float]:
    from KDEpy import FFTKDE

    def call() -> float:
        kde = FFTKDE(kernel="gaussian", bw="ISJ").fit(case.X)
        kde.evaluate(2**10)
        return float(kde.bw)

    return call


PEERS = (
    _r(
        "R KernSmooth::dpik", "PLUGIN", "KernSmooth::dpik(x, scalest = 'stdev', level = 2L, gridsize = 401L)",
        exact=False, caveat="binned on 401 points; scalest='stdev' is the papers' PLUGIN (parzen's scale='sd')",
    ),
    _r(
        "R ks::hpi", "PLUGIN", "ks::hpi(x)", exact=False,
        caveat="KernSmooth::dpik on 401 bins with scale min(sd, IQR/1.349): compared with parzen's plugin(scale='minim')",
        counterpart=lambda case: bandwidth.plugin(case.X, scale="minim"),
    ),
    Peer(
        "statsmodels KDEMultivariate cv_ls", "LSCV_h", True, _CV_LS_CAVEAT.format("per-column bandwidths h*sd_k"),
        "statsmodels", _timed(_statsmodels_cv_ls),
    ),
    _r(
        "R ks::hlscv(binned=FALSE)", "LSCV_h", "ks::hlscv(x, binned = FALSE)", exact=True, dims=(1,),
        caveat="leave-one-out term over n(n-1) (parzen follows the papers' n^2, docs/departures.md item 6): minimisers differ by O(1/n)",
    ),
    _r(
        "R ks::Hlscv(binned=FALSE)", "LSCV_H", "ks::Hlscv(x, binned = FALSE)", exact=True,
        caveat="leave-one-out term over n(n-1) (docs/departures.md item 6) and its own optimiser: compared as H",
    ),
    Peer(
        "statsmodels KDEMultivariate cv_ls", "LSCV_H", True, _CV_LS_CAVEAT.format("H"),
        "statsmodels", _timed(_statsmodels_cv_ls),
    ),
    Peer(
        "scipy gaussian_kde", "KDE", True, "bw_method = f gives H = f^2 Sigma, the case's H", "scipy",
        _timed(_scipy_kde),
    ),
    Peer(
        "sklearn KernelDensity", "KDE", True, "rtol=0, atol=0, algorithm='auto' (tree), on whitened data",
        "sklearn", _timed(_sklearn_kde),
    ),
    Peer(
        "statsmodels KDEMultivariate", "KDE", True, "explicit bw on whitened data; pdf loops over queries in Python",
        "statsmodels", _timed(_statsmodels_kde),
    ),
    Peer(
        "KDEpy NaiveKDE", "KDE", True, "on whitened data; loops over data points in Python", "KDEpy",
        _timed(_kdepy_naive),
    ),
    Peer(
        "KDEpy FFTKDE", "KDE", False,
        f"binned FFT on a {FFT_GRID[1]}-point (1-D) or {FFT_GRID[2]}^2 (2-D) grid, interpolated at the queries",
        "KDEpy", _timed(_kdepy_fft), dims=(1, 2),
    ),
    Peer(
        "statsmodels KDEUnivariate fft", "KDE", False, "binned FFT on its default grid, interpolated at the queries",
        "statsmodels", _timed(_statsmodels_fft), dims=(1,),
    ),
    Peer(
        "KDEpy FFTKDE ISJ", "KDE", False,
        "selects its own bandwidth (Botev's ISJ) and evaluates on a 1024-point grid: value is its h, not comparable",
        "KDEpy", _timed(_kdepy_isj), dims=(1,), comparable=False,
    ),
)
