"""The benchmark problems of section 7.2 of Andrzejewski et al. (paper 000 in docs/statistics.md):
their sizes, seeded data and parzen's calls.

Every problem is one selection or evaluation a user runs; a :class:`Case` is a problem at one
size (n, d) with its data.  Data are normal mixtures drawn from a fixed seed: continuous draws
have no ties (LSCV is unreliable on tied data), and a second component makes the density
non-normal so that the selectors have something to find.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import KDE, bandwidth

#: Problem keys (the CLI's ``--only``) and the title each one gets in the report.
PROBLEMS = {
    "plugin": "PLUGIN",
    "lscv_h": "LSCV_h",
    "lscv_H": "LSCV_H",  # two problems: one evaluation of g(H), and the whole selection
    "kde": "KDE",
}
LSCV_H_OBJECTIVE = "LSCV_H objective"


def _doubling(lo: int, hi: int) -> list[int]:
    return [lo << k for k in range((hi // lo).bit_length())]


def _grid(ns, ds) -> list[tuple[int, int]]:
    return [(n, d) for d in ds for n in ns]


#: (n, d) per problem title for each scale: "full" is section 7.2 of paper 000 (the LSCV_H
#: selection is the issue's n = 1000, d = 4 against ks::Hlscv); "default" fits a 2-core machine
#: in minutes; "tiny" is for the tests.
SIZES = {
    "tiny": {
        "PLUGIN": _grid([64, 128], [1]),
        "LSCV_h": _grid([64, 128], [1, 2]),
        LSCV_H_OBJECTIVE: _grid([64, 128], [1, 2]),
        "LSCV_H": [(100, 2)],
        "KDE": _grid([100, 200], [1, 2]),
    },
    "default": {
        "PLUGIN": _grid([1024, 4096, 16384], [1]),
        "LSCV_h": _grid([256, 1024], [1, 4, 16]),
        LSCV_H_OBJECTIVE: _grid([1024, 4096], [1, 4, 16]),
        "LSCV_H": [(1000, 4)],
        "KDE": _grid([10**4, 10**5], [1, 2]),
    },
    "full": {
        "PLUGIN": _grid(_doubling(1024, 32768), [1]),
        "LSCV_h": _grid(_doubling(64, 1024), [1, 2, 4, 8, 16]),
        LSCV_H_OBJECTIVE: _grid(_doubling(1024, 16384), [1, 2, 4, 8, 16]),
        "LSCV_H": [(1000, 4)],
        "KDE": [*_grid([10**4, 10**5, 10**6], [1]), *_grid([10**4, 10**5], [2])],
    },
}


def titles(only) -> list[str]:
    """Problem titles, in run order, for the problem keys ``only``.

    Parameters
    ----------
    only : iterable of str
        Keys of :data:`PROBLEMS`.

    Returns
    -------
    list of str
        Their titles; "lscv_H" gives the objective's title before the selection's.
    """
    chosen = [PROBLEMS[key] for key in only]
    if "LSCV_H" in chosen:
        chosen.insert(chosen.index("LSCV_H"), LSCV_H_OBJECTIVE)
    return chosen


def mixture(n: int, d: int, seed: int) -> np.ndarray:
    """Draws of a two-component normal mixture in d dimensions.

    One third of the points come from N(3 * 1, A A^T), the rest from N(0, A A^T), with a fixed
    random A near the identity (correlated columns of unequal scales).

    Parameters
    ----------
    n : int
        The number of draws.
    d : int
        The dimension.
    seed : int
        With n and d, seeds the generator: the same arguments give the same data.

    Returns
    -------
    numpy.ndarray
        (n,) for d = 1, else (n, d).
    """
    rng = np.random.default_rng([seed, n, d])
    A = np.eye(d) + rng.normal(size=(d, d)) / np.sqrt(d)
    X = rng.normal(size=(n, d)) @ A.T
    X[: n // 3] += 3.0
    return X[:, 0] if d == 1 else X


@dataclass(frozen=True)
class Case:
    """One problem at one size, with its data.

    Parameters
    ----------
    problem : str
        The problem title.
    n, d : int
        The size.
    X : numpy.ndarray
        The data, (n,) or (n, d).
    Q : numpy.ndarray, optional
        KDE's query points.
    H : numpy.ndarray, optional
        The bandwidth matrix of KDE and of the LSCV_H objective.
    """

    problem: str
    n: int
    d: int
    X: np.ndarray = field(repr=False)
    Q: np.ndarray | None = field(default=None, repr=False)
    H: np.ndarray | None = field(default=None, repr=False)

    @property
    def sigma(self) -> np.ndarray:
        """Sample covariance of X (ddof = 1), d x d."""
        return np.atleast_2d(np.cov(self.X, rowvar=False))


def make_case(problem: str, n: int, d: int) -> Case:
    """The data of ``problem`` at (n, d).

    KDE queries are m = n fresh draws; its bandwidth is H = f^2 Sigma (PLUGIN's h for d = 1, the
    normal-scale rule for d > 1), the form SciPy takes.  The LSCV_H objective is evaluated at the
    normal-scale matrix.

    Parameters
    ----------
    problem : str
        A problem title.
    n, d : int
        The size.

    Returns
    -------
    Case
    """
    X = mixture(n, d, seed=0)
    if problem == LSCV_H_OBJECTIVE:
        return Case(problem, n, d, X, H=_as_matrix(bandwidth.normal_scale(X)))
    if problem != "KDE":
        return Case(problem, n, d, X)
    H = _as_matrix(bandwidth.plugin(X) if d == 1 else bandwidth.normal_scale(X))
    return Case(problem, n, d, X, Q=mixture(n, d, seed=1), H=H)


def _as_matrix(h_or_H) -> np.ndarray:
    """A selector's answer as a bandwidth matrix: h^2 for a scalar h, H itself otherwise."""
    return np.atleast_2d(h_or_H * h_or_H if np.ndim(h_or_H) == 0 else h_or_H)


def ours(case: Case, backend: str, dtype) -> Any:
    """The zero-argument call that computes ``case`` with parzen.

    Parameters
    ----------
    case : Case
        The problem and its data.
    backend : str
        parzen's backend.
    dtype : str or numpy.dtype
        The working precision.

    Returns
    -------
    callable
        Calling it runs the selector (or KDE's pdf) and returns its result.
    """
    kw = {"backend": backend, "dtype": dtype}
    X = case.X
    calls = {
        "PLUGIN": lambda: bandwidth.plugin(X, **kw),
        "LSCV_h": lambda: bandwidth.lscv_h_factor(X, **kw),  # the multiplier: see comparable()
        LSCV_H_OBJECTIVE: lambda: bandwidth.lscv_H_objective(X, case.H, **kw),
        "LSCV_H": lambda: bandwidth.lscv_H(X, **kw),
        "KDE": lambda: KDE(bandwidth=case.H, **kw).fit(X).pdf(case.Q),
    }
    return calls[case.problem]


def comparable(case: Case, value) -> np.ndarray:
    """parzen's result as the quantity peers report: per-column bandwidths in data units for
    LSCV_h (h * sd_k, since H = h^2 Sigma), the value itself otherwise."""
    if case.problem == "LSCV_h":
        return value * np.sqrt(np.diag(case.sigma))
    return np.asarray(value, dtype=np.float64)


#: Relative differences of KDE densities are taken where ours is at least this fraction of
#: its maximum: in the far tails approximate (grid) methods and float32 lose all relative accuracy.
DENSITY_FLOOR = 1e-4


def relative_difference(case: Case, value, exact) -> float:
    """The relative difference |value - exact| / |exact|.

    Parameters
    ----------
    case : Case
        Which problem the values answer.
    value, exact : array_like
        A peer's (or a configuration's) result and the reference.

    Returns
    -------
    float
        Frobenius norms for bandwidths (scalars, vectors, matrices); for KDE densities the
        largest pointwise relative difference where ``exact`` is at least :data:`DENSITY_FLOOR`
        times its maximum.
    """
    value, exact = np.asarray(value, dtype=np.float64), np.asarray(exact, dtype=np.float64)
    if case.problem == "KDE":
        keep = exact >= DENSITY_FLOOR * exact.max()
        return float(np.max(np.abs(value[keep] - exact[keep]) / exact[keep]))
    return float(np.linalg.norm(value - exact) / np.linalg.norm(exact))


def lscv_criterion(case: Case, H) -> float:
    """The LSCV criterion g(H) of the case's data: Andrzejewski et al. (paper 000 in
    docs/statistics.md), eq. 32.

    Parameters
    ----------
    case : Case
        The data.
    H : array_like
        A bandwidth matrix (a scalar for d = 1).

    Returns
    -------
    float
        g(H); lower is better.  Warnings of the evaluation are suppressed.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bandwidth.lscv_H_objective(case.X, np.atleast_2d(H))


def criterion_note(case: Case, peer_value, exact) -> str:
    """For LSCV peers: the papers' criterion g(H) at the peer's H and at parzen's, which
    shows who found the lower minimum when the two criteria differ slightly."""
    if case.problem == "LSCV_h":
        peer_H, our_H = np.diag(np.atleast_1d(peer_value) ** 2), exact**2 * case.sigma
    else:
        peer_H, our_H = peer_value, exact
    return f"g(H) {lscv_criterion(case, peer_H):.6g}, parzen's {lscv_criterion(case, our_H):.6g}"
