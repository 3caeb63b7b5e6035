"""Error paths: every bad input gives a ValueError whose message names the problem;
tied data and edge minima give warnings; pandas and polars inputs are accepted.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import parzen
from parzen import KDE, LSCVWarning, TiedDataWarning
from parzen import bandwidth as bw
from parzen.kernels import KERNELS

pl = pytest.importorskip("polars")

N = 40
_rng = np.random.default_rng(2024)
X1 = _rng.normal(size=N)  # 1-D sample, distinct values
X2 = _rng.normal(size=(N, 2)) @ np.array([[1.0, 0.0], [0.6, 0.8]])  # correlated 2-D sample
H2 = np.array([[0.3, 0.1], [0.1, 0.2]])

#: Every public entry point that takes a 1-D sample.
UNIVARIATE = {
    "plugin": lambda x: bw.plugin(x),
    "plugin_minim": lambda x: bw.plugin(x, scale="minim"),
    "plugin_stages": lambda x: bw.plugin_stages(x),
    "lscv_h": lambda x: bw.lscv_h(x),
    "lscv_h_objective": lambda x: bw.lscv_h_objective(x, 0.5),
    "lscv_H_objective": lambda x: bw.lscv_H_objective(x, 0.2),
    "scott": lambda x: bw.scott(x),
    "silverman": lambda x: bw.silverman(x),
    "normal_scale": lambda x: bw.normal_scale(x),
    "KDE.fit": lambda x: KDE().fit(x),
    "KDE.fit(numeric)": lambda x: KDE(bandwidth=0.4).fit(x),
}
#: Every public entry point that takes a d-variate sample (d = 2 here).
MULTIVARIATE = {
    "lscv_h": lambda X: bw.lscv_h(X),
    "lscv_H": lambda X: bw.lscv_H(X),
    "lscv_diag": lambda X: bw.lscv_diag(X),
    "lscv_h_objective": lambda X: bw.lscv_h_objective(X, 0.5),
    "lscv_H_objective": lambda X: bw.lscv_H_objective(X, H2),
    "scott": lambda X: bw.scott(X),
    "silverman": lambda X: bw.silverman(X),
    "normal_scale": lambda X: bw.normal_scale(X),
    "KDE.fit": lambda X: KDE().fit(X),
    "KDE.fit(lscv_H)": lambda X: KDE(bandwidth="lscv_H").fit(X),
    "KDE.fit(matrix)": lambda X: KDE(bandwidth=H2).fit(X),
}
#: The ones that need the sample covariance (lscv_H_objective and a numeric bandwidth do not).
NEEDS_COVARIANCE = [k for k in MULTIVARIATE if k not in ("lscv_H_objective", "KDE.fit(matrix)")]


def _with(values: np.ndarray, row: int, col: int | None, value) -> np.ndarray:
    out = values.copy()
    if col is None:
        out[row] = value
    else:
        out[row, col] = value
    return out


# --- non-finite data ----------------------------------------------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("name", list(UNIVARIATE))
def test_non_finite_univariate(name, bad):
    with pytest.raises(ValueError, match=r"contains 1 NaN or infinite value\(s\), first in row 3"):
        UNIVARIATE[name](_with(X1, 3, None, bad))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("name", list(MULTIVARIATE))
def test_non_finite_multivariate(name, bad):
    with pytest.raises(ValueError, match=r"NaN or infinite value\(s\), first in row 5, column 'x1'"):
        MULTIVARIATE[name](_with(X2, 5, 1, bad))


def test_non_finite_message_names_pandas_column():
    df = pd.DataFrame({"depth": X1, "mag": _with(X1, 7, None, np.inf)})
    with pytest.raises(ValueError, match=r"row 7, column 'mag'.*dropna"):
        bw.scott(df)
    with pytest.raises(ValueError, match=r"row 7, column 'mag'"):
        KDE().fit(pl.from_pandas(df))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("d", [1, 2])
def test_non_finite_query_points(d, bad):
    kde = KDE(bandwidth=0.5).fit(X1 if d == 1 else X2)
    Q = np.zeros(4) if d == 1 else np.zeros((4, 2))
    with pytest.raises(ValueError, match=r"query points contains 1 NaN or infinite"):
        kde.pdf(_with(Q, 2, None if d == 1 else 0, bad))
    with pytest.raises(ValueError, match=r"query points contains 1 NaN or infinite"):
        kde.score_samples(_with(Q, 2, None if d == 1 else 0, bad))


# --- too few rows -------------------------------------------------------------------------


@pytest.mark.parametrize("rows", [0, 1])
@pytest.mark.parametrize("name", list(UNIVARIATE))
def test_fewer_than_two_rows_univariate(name, rows):
    if name == "KDE.fit(numeric)":
        pytest.skip("a numeric bandwidth needs no statistics: see test_numeric_bandwidth_allows_one_row")
    with pytest.raises(ValueError, match=rf"has {rows} row\(s\); this needs at least 2 observations"):
        UNIVARIATE[name](X1[:rows])


@pytest.mark.parametrize("name", list(MULTIVARIATE))
def test_fewer_than_two_rows_multivariate(name):
    if name == "KDE.fit(matrix)":
        pytest.skip("a numeric bandwidth needs no statistics")
    with pytest.raises(ValueError, match=r"has 1 row\(s\); this needs at least 2 observations"):
        MULTIVARIATE[name](X2[:1])


def test_numeric_bandwidth_allows_one_row():
    kde = KDE(bandwidth=0.5).fit(X1[:1])
    assert kde.pdf([X1[0]])[0] == pytest.approx(1 / (0.5 * np.sqrt(2 * np.pi)))
    with pytest.raises(ValueError, match=r"has 0 row\(s\); this needs at least 1"):
        KDE(bandwidth=0.5).fit(X1[:0])


@pytest.mark.parametrize("d", [2, 3])
def test_lscv_H_needs_d_plus_two_rows(d):
    X = np.random.default_rng(d).normal(size=(d + 1, d))
    with pytest.raises(ValueError, match=rf"LSCV_H needs at least d \+ 2 = {d + 2} rows for {d}-column X, got {d + 1}"):
        bw.lscv_H(X)
    with pytest.raises(ValueError, match=r"LSCV_H needs at least d \+ 2"):
        KDE(bandwidth="lscv_H").fit(X)


# --- degenerate columns ---------------------------------------------------------------------


@pytest.mark.parametrize("name", list(UNIVARIATE))
def test_constant_univariate(name):
    if name in ("lscv_H_objective", "KDE.fit(numeric)"):
        pytest.skip("needs no variance estimate")
    x = pd.Series(np.full(N, 4.5), name="mag")
    with pytest.raises(ValueError, match=r"zero variance in column\(s\) 'mag'"):
        UNIVARIATE[name](x)


@pytest.mark.parametrize("name", NEEDS_COVARIANCE)
def test_zero_variance_column_named(name):
    df = pd.DataFrame({"lat": X2[:, 0], "depth": np.full(N, 100.0), "long": X2[:, 1]})
    with pytest.raises(ValueError, match=r"zero variance in column\(s\) 'depth'; a constant column") as err:
        MULTIVARIATE[name](df)
    assert "'lat'" not in str(err.value) and "'long'" not in str(err.value)
    with pytest.raises(ValueError, match=r"zero variance in column\(s\) 'x1'"):  # default names
        MULTIVARIATE[name](df.to_numpy())


@pytest.mark.parametrize("name", NEEDS_COVARIANCE)
def test_identical_columns_singular(name):
    z = np.random.default_rng(1).normal(size=N)
    df = pd.DataFrame({"lat": X2[:, 0], "lat_copy": X2[:, 0], "depth": z})
    with pytest.raises(ValueError, match=r"singular or not positive definite \(columns 'lat', 'lat_copy' are linearly dependent\)"):
        MULTIVARIATE[name](df)


@pytest.mark.parametrize("name", NEEDS_COVARIANCE)
def test_linear_combination_singular(name):
    z = np.random.default_rng(1).normal(size=N)
    X = np.column_stack([z, X2[:, 0], X2[:, 1], 2 * X2[:, 0] - 3 * X2[:, 1]])
    with pytest.raises(ValueError, match=r"singular or not positive definite \(columns 'x1', 'x2', 'x3' are linearly dependent\)"):
        MULTIVARIATE[name](X)


# --- shapes -------------------------------------------------------------------------------


def test_query_dimension_mismatch():
    kde2 = KDE(bandwidth=0.5).fit(X2)
    with pytest.raises(ValueError, match=r"query points must have 2 column\(s\) like the fitted data, got shape \(5, 3\)"):
        kde2.pdf(np.zeros((5, 3)))
    with pytest.raises(ValueError, match=r"must have 2 column\(s\).*got shape \(4,\)"):
        kde2.pdf(np.zeros(4))
    with pytest.raises(ValueError, match=r"must have 2 column\(s\).*got shape \(2, 2, 2\)"):
        kde2.pdf(np.zeros((2, 2, 2)))
    kde1 = KDE(bandwidth=0.5).fit(X1)
    with pytest.raises(ValueError, match=r"query points must have 1 column\(s\).*got shape \(5, 2\)"):
        kde1.pdf(np.zeros((5, 2)))
    assert kde2.pdf(np.zeros(2)).shape == (1,)  # one point as a length-d vector is fine
    assert kde1.pdf(0.0).shape == (1,)


@pytest.mark.parametrize("name", sorted(set(UNIVARIATE) | set(MULTIVARIATE)))
def test_three_dimensional_data(name):
    f = MULTIVARIATE.get(name) or UNIVARIATE[name]
    with pytest.raises(ValueError, match=r"must be 1-D \(n,\) or 2-D \(n, d\), got an array of shape \(4, 5, 2\)"):
        f(np.zeros((4, 5, 2)))


def test_H_of_wrong_shape():
    with pytest.raises(ValueError, match=r"H must be a 2 x 2 matrix for 2-column X, got shape \(3, 3\)"):
        bw.lscv_H_objective(X2, np.eye(3))
    with pytest.raises(ValueError, match=r"H must be a 2 x 2 matrix.*got shape \(1, 2\)"):
        bw.lscv_H_objective(X2, [0.1, 0.2])
    with pytest.raises(ValueError, match=r"a 2 x 2 matrix for 2-column data; got an array of shape \(3, 3\)"):
        KDE(bandwidth=np.eye(3)).fit(X2)
    with pytest.raises(ValueError, match=r"2 per-column values.*got an array of shape \(3,\)"):
        KDE(bandwidth=[0.1, 0.2, 0.3]).fit(X2)


@pytest.mark.parametrize("selector", [bw.lscv_H, bw.lscv_diag])
def test_start_matrix_checked(selector):
    with pytest.raises(ValueError, match=r"start must be a 2 x 2 matrix, got shape \(3, 3\)"):
        selector(X2, start=np.eye(3))
    with pytest.raises(ValueError, match=r"start is singular or not positive definite"):
        selector(X2, start=[[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(ValueError, match=r"start is not symmetric"):
        selector(X2, start=[[1.0, 0.5], [0.1, 1.0]])


@pytest.mark.parametrize(
    ("H", "message"),
    [
        ([[1.0, 2.0], [2.0, 1.0]], r"is singular or not positive definite"),  # indefinite
        ([[1.0, 1.0], [1.0, 1.0]], r"is singular or not positive definite"),  # singular
        ([[-1.0, 0.0], [0.0, 1.0]], r"is singular or not positive definite"),
        ([[1.0, 0.5], [0.2, 1.0]], r"is not symmetric"),
        ([[1.0, np.nan], [np.nan, 1.0]], r"contains NaN or infinite entries"),
    ],
)
def test_non_spd_H(H, message):
    with pytest.raises(ValueError, match=rf"H {message}"):
        bw.lscv_H_objective(X2, H)
    with pytest.raises(ValueError, match=rf"the bandwidth matrix {message}"):
        KDE(bandwidth=np.array(H)).fit(X2)


@pytest.mark.parametrize("h", [0.0, -0.5, np.nan, np.inf, [0.5, -1.0], [[0.5]]])
def test_lscv_h_objective_bad_h(h):
    with pytest.raises(ValueError, match=r"h must be a positive finite scalar or 1-D array"):
        bw.lscv_h_objective(X2, h)


def test_lscv_h_grid_too_small():
    with pytest.raises(ValueError, match=r"grid must have at least 3 points, got 2"):
        bw.lscv_h(X1, grid=2)


# --- unknown names ------------------------------------------------------------------------


def test_unknown_kernel_lists_options():
    with pytest.raises(ValueError, match=r"unknown kernel 'gauss'; choose one of") as err:
        KDE(kernel="gauss").fit(X1)
    assert all(repr(name) in str(err.value) for name in KERNELS)
    with pytest.raises(ValueError, match=r"unknown kernel 'box'; choose one of .*epanechnikov"):
        parzen.kernels.get_kernel("box")


def test_unknown_bandwidth_name_lists_options():
    with pytest.raises(ValueError, match=r"unknown bandwidth 'lscv'; choose one of") as err:
        KDE(bandwidth="lscv").fit(X1)
    for name in ("auto", "plugin", "lscv_h", "lscv_H", "lscv_diag", "scott", "silverman", "normal_scale"):
        assert repr(name) in str(err.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda: KDE(backend="cuda").fit(X1),
        lambda: KDE(bandwidth=0.4, backend="cuda").fit(X1),
        lambda: bw.lscv_h(X1, backend="cuda"),
        lambda: bw.lscv_H(X2, backend="cuda"),
        lambda: bw.lscv_diag(X2, backend="cuda"),
        lambda: bw.lscv_h_objective(X1, 0.5, backend="cuda"),
        lambda: bw.lscv_H_objective(X2, H2, backend="cuda"),
        lambda: bw.plugin(X1, backend="cuda"),
    ],
)
def test_unknown_backend_lists_options(call):
    with pytest.raises(ValueError, match=r"unknown backend 'cuda'; choose 'auto' or one of 'numpy'"):
        call()


def test_unknown_plugin_scale_lists_options():
    with pytest.raises(ValueError, match=r"unknown scale 'iqr'; choose one of 'sd', 'minim'"):
        bw.plugin(X1, scale="iqr")
    with pytest.raises(ValueError, match=r"unknown scale 'iqr'"):
        bw.plugin_stages(X1, scale="iqr")


def test_unknown_kde_parameter():
    with pytest.raises(ValueError, match=r"unknown parameter 'bandwith' for KDE; valid: bandwidth, kernel"):
        KDE().set_params(bandwith=0.3)


# --- non-numeric data ---------------------------------------------------------------------

NON_NUMERIC = {
    "str array": np.array(["1.0", "2.0", "3.5", "4.0"]),
    "bytes array": np.array([b"1", b"2", b"3"]),
    "object array": np.array([1.0, "2", 3.0, 4.0], dtype=object),
    "object floats": np.array([1.0, 2.0, 3.5], dtype=object),
    "list of str": ["a", "b", "c"],
    "datetime": np.array(["2024-01-01", "2024-02-01", "2024-03-05"], dtype="datetime64[D]"),
    "pandas str Series": pd.Series(["a", "b", "c"], name="city"),
    "pandas frame with str column": pd.DataFrame({"a": [1.0, 2.0, 4.0], "b": ["u", "v", "w"]}),
    "polars frame with str column": pl.DataFrame({"a": [1.0, 2.0, 4.0], "b": ["u", "v", "w"]}),
}


@pytest.mark.parametrize("data", list(NON_NUMERIC.values()), ids=list(NON_NUMERIC))
def test_non_numeric_data(data):
    with pytest.raises(ValueError, match=r"X must be numeric, got values of type .*convert or drop non-numeric"):
        bw.scott(data)
    with pytest.raises(ValueError, match=r"X must be numeric"):
        KDE(bandwidth=0.5).fit(data)
    if np.ndim(data) == 1:
        with pytest.raises(ValueError, match=r"x must be numeric"):
            bw.plugin(data)


def test_non_numeric_query_points():
    with pytest.raises(ValueError, match=r"query points must be numeric"):
        KDE(bandwidth=0.5).fit(X1).pdf(["a", "b"])


def test_complex_data_rejected():
    with pytest.raises(ValueError, match=r"numeric|complex|real"):
        bw.scott(X1 + 1j)


# --- univariate-only methods --------------------------------------------------------------


@pytest.mark.parametrize("f", [bw.plugin, bw.plugin_stages])
def test_plugin_rejects_two_columns(f):
    with pytest.raises(ValueError, match=r"PLUGIN is univariate: x has 2 columns; select one column"):
        f(X2)
    assert f(X2[:, :1]) == f(X2[:, 0])  # one column as (n, 1) is fine


def test_kde_plugin_rejects_two_columns():
    with pytest.raises(ValueError, match=r"bandwidth='plugin' is univariate but X has 2 columns; use 'lscv_H'"):
        KDE(bandwidth="plugin").fit(X2)


# --- weights ------------------------------------------------------------------------------

BAD_WEIGHTS = {
    "short": (np.ones(N - 1), r"weights must be 40 numbers, one per row of the data; got shape \(39,\)"),
    "long": (np.ones(N + 1), r"weights must be 40 numbers.*\(41,\)"),
    "scalar": (1.0, r"weights must be 40 numbers.*got shape \(\)"),
    "negative": (np.r_[-1.0, np.ones(N - 1)], r"weights must be finite and non-negative"),
    "nan": (np.r_[np.nan, np.ones(N - 1)], r"weights must be finite and non-negative"),
    "inf": (np.r_[np.inf, np.ones(N - 1)], r"weights must be finite and non-negative"),
    "all zero": (np.zeros(N), r"weights sum to zero"),
    "object": (np.array([1.0] * (N - 1) + ["x"], dtype=object), r"weights must be 40 numbers"),
}


@pytest.mark.parametrize("weights,message", list(BAD_WEIGHTS.values()), ids=list(BAD_WEIGHTS))
@pytest.mark.parametrize(
    "call",
    [
        lambda w: bw.scott(X1, weights=w),
        lambda w: bw.silverman(X1, weights=w),
        lambda w: bw.normal_scale(X2, weights=w),
        lambda w: KDE(bandwidth="scott").fit(X1, weights=w),
        lambda w: KDE(bandwidth=0.4).fit(X2, weights=w),
    ],
    ids=["scott", "silverman", "normal_scale", "KDE(scott)", "KDE(numeric)"],
)
def test_bad_weights(call, weights, message):
    with pytest.raises(ValueError, match=message):
        call(weights)


def test_string_weights_rejected():
    with pytest.raises(ValueError, match=r"weights"):
        bw.scott(X1, weights=["1"] * N)


@pytest.mark.parametrize("rule", [bw.scott, bw.silverman, bw.normal_scale])
@pytest.mark.parametrize("case", ["one positive weight", "weight only on tied rows"])
def test_weights_with_degenerate_weighted_covariance(rule, case):
    x = X1.copy()
    w = np.zeros(N)
    if case == "one positive weight":
        w[0] = 1.0
    else:
        x[1] = x[0]
        w[:2] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(ValueError, match=r"weight"):
            rule(x, weights=w)


@pytest.mark.parametrize(("name", "X"), [("isj", X1)])
def test_weights_rejected_by_unweighted_selectors(name, X):
    with pytest.raises(ValueError, match=rf"bandwidth='{name}' is defined for unweighted data; with weights use 'plugin', 'lscv_h', 'lscv_H', 'lscv_diag', 'plugin_H', 'plugin_diag', 'scv_H', 'scott'"):
        KDE(bandwidth=name).fit(X, weights=np.ones(len(X)))


@pytest.mark.parametrize("name", ["scott", "silverman", "normal_scale"])
@pytest.mark.parametrize("X", [X1, X2], ids=["1-D", "2-D"])
def test_weights_accepted_by_rules_of_thumb(name, X):
    w = np.random.default_rng(5).exponential(size=len(X))
    kde = KDE(bandwidth=name).fit(X, weights=w)
    np.testing.assert_allclose(kde.weights_, w / w.sum())
    direct = getattr(bw, name)(X, weights=w)
    np.testing.assert_allclose(kde.bandwidth_, direct)
    # uniform weights are the unweighted rule
    np.testing.assert_allclose(getattr(bw, name)(X, weights=np.full(len(X), 3.0)), getattr(bw, name)(X), rtol=1e-12)


def test_auto_bandwidth_with_weights_in_2d_uses_normal_scale():
    w = np.random.default_rng(5).exponential(size=N)
    kde = KDE().fit(X2, weights=w)
    np.testing.assert_allclose(kde.H_, bw.normal_scale(X2, weights=w))


# --- numeric bandwidths -------------------------------------------------------------------


@pytest.mark.parametrize("h", [0.0, -0.3, np.nan, np.inf, -np.inf])
def test_non_positive_numeric_bandwidth(h):
    with pytest.raises(ValueError, match=r"a numeric bandwidth must be positive and finite"):
        KDE(bandwidth=h).fit(X1)


@pytest.mark.parametrize("h", [[0.3, 0.0], [0.3, -0.1], [np.nan, 0.2]])
def test_non_positive_per_column_bandwidth(h):
    with pytest.raises(ValueError, match=r"bandwidths per column must be positive and finite"):
        KDE(bandwidth=h).fit(X2)


# --- not fitted, dtype --------------------------------------------------------------------


@pytest.mark.parametrize("method", ["pdf", "score_samples", "score", "sample"])
def test_use_before_fit(method):
    kde = KDE()
    args = () if method == "sample" else (X1,)
    with pytest.raises(ValueError, match=r"this KDE is not fitted yet; call .fit\(X\) first"):
        getattr(kde, method)(*args)


@pytest.mark.parametrize("n_samples", [-1, 2.5])
def test_bad_sample_size(n_samples):
    with pytest.raises(ValueError, match=r"n_samples must be a non-negative integer"):
        KDE(bandwidth=0.3).fit(X1).sample(n_samples)


LOW_PRECISION_CALLS = [
    lambda t, b: KDE(dtype=t, backend=b).fit(X1),
    lambda t, b: KDE(bandwidth=0.4, dtype=t, backend=b).fit(X2),
    lambda t, b: bw.plugin(X1, dtype=t, backend=b),
    lambda t, b: bw.lscv_h(X2, dtype=t, backend=b),
    lambda t, b: bw.lscv_H(X2, dtype=t, backend=b),
    lambda t, b: bw.lscv_h_objective(X2, 0.5, dtype=t, backend=b),
    lambda t, b: bw.lscv_H_objective(X2, H2, dtype=t, backend=b),
]


@pytest.mark.parametrize("dtype", [np.float32, "float32", np.float16])
@pytest.mark.parametrize("call", LOW_PRECISION_CALLS)
def test_low_precision_dtype_on_numpy_backend(call, dtype):
    with pytest.raises(ValueError, match=r"backend 'numpy' computes in float64, not float(32|16); pass dtype=None"):
        call(dtype, "numpy")


@pytest.mark.parametrize("call", LOW_PRECISION_CALLS)
def test_dtype_no_backend_supports(call):
    with pytest.raises(ValueError, match=r"no available backend computes in float16; pass dtype=None"):
        call(np.float16, "auto")


def test_float32_data_accepted():
    """The dtype argument is the compute precision; float32 *data* are converted."""
    x32 = X1.astype(np.float32)
    assert bw.plugin(x32) == bw.plugin(x32.astype(np.float64))
    assert bw.lscv_h(x32) == bw.lscv_h(x32.astype(np.float64))


def test_psi_functional_validates():
    with pytest.raises(ValueError, match=r"NaN or infinite"):
        bw.psi_functional(np.r_[np.nan, X1], 4, 0.5)


# --- warnings -----------------------------------------------------------------------------

QUAKES = pd.read_csv(Path(parzen.__file__).parent / "datasets" / "quakes.csv")


def _tied_sample(n: int = 60) -> np.ndarray:
    """Quakes-like rounded measurements: one decimal, many repeated values."""
    return np.round(np.random.default_rng(8).normal(size=(n, 2)) * [1.0, 2.0], 1)


def _repeated_rows_sample(n: int = 60) -> np.ndarray:
    """Whole observations that repeat: measurements rounded to integers."""
    return np.round(np.random.default_rng(8).normal(size=(n, 2)) * [1.0, 2.0])


@pytest.mark.parametrize(
    ("call", "method"),
    [
        (lambda X: bw.lscv_h(_repeated_rows_sample()), "LSCV_h"),
        (lambda X: bw.lscv_h(X[:, 0]), "LSCV_h"),
        (lambda X: bw.lscv_H(X), "LSCV_H"),
        (lambda X: bw.lscv_diag(X), r"LSCV \(diagonal\)"),
        (lambda X: KDE(bandwidth="lscv_H").fit(X), "LSCV_H"),
    ],
)
def test_tied_data_warning(call, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LSCVWarning)
        with pytest.warns(TiedDataWarning, match=rf"duplicated values .*{method} is not well-behaved on tied data"):
            call(_tied_sample())


def test_tied_data_warning_names_quakes_columns():
    with pytest.warns(TiedDataWarning, match=r"column\(s\) 'lat', 'long'"):
        bw.lscv_diag(QUAKES[["lat", "long"]].iloc[:300])


def test_lscv_h_warns_of_repeated_rows_only():
    """LSCV_h (H = h^2 Sigma) degenerates only on repeated rows, whose distance is 0 at every h;
    ties within one column (quakes' rounded coordinates) leave it well-behaved (ks checks rows too)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", TiedDataWarning)
        bw.lscv_h(QUAKES[["lat", "long"]].iloc[:300])
    X = QUAKES[["lat", "long"]].iloc[:300].to_numpy()
    X[250] = X[17]
    with pytest.warns(TiedDataWarning, match=r"rows 17 and 250 are the same observation"):
        bw.lscv_h(X)


def test_no_tied_data_warning_on_continuous_data():
    with warnings.catch_warnings():
        warnings.simplefilter("error", TiedDataWarning)
        bw.lscv_h(X2)
        bw.lscv_h(X1)


def test_lscv_warning_on_quakes_magnitudes():
    """Magnitudes are rounded to 0.1: g(h) -> -inf as h -> 0, the minimum is the lower edge."""
    with pytest.warns(TiedDataWarning), pytest.warns(LSCVWarning, match=r"LSCV_h minimum lies at the edge of the search range"):
        h = bw.lscv_h_factor(QUAKES["mag"].iloc[:300])
    assert h == pytest.approx(bw.reference_h0(300, 1) / 16)


def test_lscv_warning_on_clustered_data_without_ties():
    """Two tight clusters far apart: h relative to Sigma is far below h0 / 16."""
    rng = np.random.default_rng(3)
    x = np.r_[rng.normal(0.0, 1e-3, 50), rng.normal(100.0, 1e-3, 50)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", TiedDataWarning)
        with pytest.warns(LSCVWarning, match=r"edge of the search range \[0\.02636, "):
            h = bw.lscv_h_factor(x)
    assert h == pytest.approx(bw.reference_h0(100, 1) / 16)


# --- pandas and polars inputs -------------------------------------------------------------

SERIES_1D = {
    "pandas Series": lambda x: pd.Series(x, name="eruptions"),
    "pandas Series, unnamed, odd index": lambda x: pd.Series(x, index=np.arange(len(x)) * 3 + 7),
    "pandas DataFrame (1 column)": lambda x: pd.DataFrame({"eruptions": x}),
    "polars Series": lambda x: pl.Series("eruptions", x),
    "polars DataFrame (1 column)": lambda x: pl.DataFrame({"eruptions": x}),
    "list": lambda x: list(x),
}
FRAMES_2D = {
    "pandas DataFrame": lambda X: pd.DataFrame(X, columns=["eruptions", "waiting"]),
    "polars DataFrame": lambda X: pl.DataFrame({"eruptions": X[:, 0], "waiting": X[:, 1]}),
    "pandas nullable Float64": lambda X: pd.DataFrame(X, columns=["eruptions", "waiting"]).astype("Float64"),
}


@pytest.mark.parametrize("convert", list(SERIES_1D.values()), ids=list(SERIES_1D))
def test_univariate_dataframe_inputs_match_numpy(convert):
    data = convert(X1)
    for name in ("plugin", "plugin_minim", "lscv_h", "lscv_h_objective", "scott", "silverman", "normal_scale"):
        assert UNIVARIATE[name](data) == UNIVARIATE[name](X1), name
    Q = np.linspace(-3, 3, 7)
    kde = KDE().fit(data)
    np.testing.assert_array_equal(kde.pdf(convert(Q)), KDE().fit(X1).pdf(Q))
    w = np.linspace(1.0, 2.0, N)
    np.testing.assert_array_equal(
        KDE(bandwidth="scott").fit(data, weights=pd.Series(w)).pdf(Q), KDE(bandwidth="scott").fit(X1, weights=w).pdf(Q)
    )


@pytest.mark.parametrize("convert", list(SERIES_1D.values())[:5], ids=list(SERIES_1D)[:5])
def test_series_name_becomes_feature_name(convert):
    kde = KDE(bandwidth=0.3).fit(convert(X1))
    expected = "x" if "unnamed" in str(convert(X1[:2]).__class__) else None
    names = kde.feature_names_in_.tolist()
    assert names in (["eruptions"], ["x"]) and (expected is None or names == [expected])


@pytest.mark.parametrize("convert", list(FRAMES_2D.values()), ids=list(FRAMES_2D))
def test_multivariate_dataframe_inputs_match_numpy(convert):
    data = convert(X2)
    for name in ("lscv_h", "lscv_diag", "lscv_h_objective", "lscv_H_objective", "scott", "silverman", "normal_scale"):
        np.testing.assert_array_equal(MULTIVARIATE[name](data), MULTIVARIATE[name](X2), err_msg=name)
    kde = KDE().fit(data)
    assert kde.feature_names_in_.tolist() == ["eruptions", "waiting"]
    Q = X2[:6] + 0.1
    np.testing.assert_array_equal(kde.pdf(convert(Q)), KDE().fit(X2).pdf(Q))


def test_pandas_mixed_nullable_and_numpy_dtypes_accepted():
    df = pd.DataFrame({"eruptions": pd.array(X2[:, 0], dtype="Float64"), "waiting": X2[:, 1]})
    np.testing.assert_array_equal(bw.scott(df), bw.scott(X2))


def test_pandas_missing_value_message():
    df = pd.DataFrame({"eruptions": pd.array([1.0, None, 3.0, 4.5], dtype="Float64"), "waiting": [1.0, 2.0, 3.0, 5.0]})
    with pytest.raises(ValueError, match=r"NaN|missing"):
        bw.scott(df)


def test_polars_null_reported_as_missing():
    df = pl.DataFrame({"eruptions": [1.0, None, 3.0, 4.5], "waiting": [1.0, 2.0, 3.0, 5.0]})
    with pytest.raises(ValueError, match=r"1 NaN or infinite value\(s\), first in row 1, column 'eruptions'"):
        bw.scott(df)


# --- issue 15: log densities far away, empty queries, tied and costly LSCV_H ----------------


def test_score_samples_far_from_the_data_is_the_log_sum_exp():
    """Issue 15: score_samples was -inf 50 units from 1000 N(0, 1) points (the density underflows
    there); now log f by log-sum-exp, against an independent float64 computation."""
    from scipy.special import logsumexp

    x = np.random.default_rng(0).normal(size=1000)
    kde = KDE(backend="numpy").fit(x)
    h = kde.bandwidth_
    q = np.array([50.0, -50.0, 1.0])
    expected = logsumexp(-0.5 * ((q[:, None] - x[None, :]) / h) ** 2, axis=1) - np.log(x.size * h * np.sqrt(2 * np.pi))
    got = kde.score_samples(q)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert got[0] < -15000.0 and kde.pdf(50.0)[0] == 0.0  # the density itself underflows: pdf keeps 0
    assert kde.score(q) == pytest.approx(expected.sum(), rel=1e-12)
    assert got[2] == pytest.approx(np.log(kde.pdf(1.0)[0]), rel=1e-13)  # near the data: log(pdf)


@pytest.mark.parametrize("kernel", sorted(k for k in KERNELS if k != "gaussian"))
def test_score_samples_beyond_a_compact_kernels_reach_is_minus_inf(kernel):
    """There the density is truly 0 and its log -inf (documented); inside, log(pdf)."""
    kde = KDE(bandwidth=0.5, kernel=kernel).fit(X1)
    got = kde.score_samples([50.0, 0.1])
    assert got[0] == -np.inf
    assert got[1] == pytest.approx(np.log(kde.pdf(0.1)[0]), rel=1e-12)


EMPTY_QUERIES = {
    "np.empty(0)": lambda d: np.empty(0),
    "np.empty((0, d))": lambda d: np.empty((0, d)),
    "[]": lambda d: [],
    "empty DataFrame": lambda d: pd.DataFrame(np.empty((0, d))),
}


@pytest.mark.parametrize("make", list(EMPTY_QUERIES.values()), ids=list(EMPTY_QUERIES))
@pytest.mark.parametrize(("X", "bandwidth"), [(X1, "auto"), (X2, "auto"), (X2, H2)], ids=["1-D", "2-D", "2-D matrix"])
@pytest.mark.parametrize("backend", ["auto", "numpy"])
def test_empty_queries_give_empty_results(make, X, bandwidth, backend):
    """Issue 15: pdf on an empty query array leaked a reshape error; every method that takes
    points returns an empty array (score: 0.0, the sum of no log densities)."""
    kde = KDE(bandwidth=bandwidth, backend=backend).fit(X)
    Q = make(kde.n_features_in_)
    for method in ("pdf", "score_samples"):
        out = getattr(kde, method)(Q)
        assert isinstance(out, np.ndarray) and out.shape == (0,), method
    assert kde.score(Q) == 0.0


def test_empty_queries_with_wrong_columns_are_rejected():
    with pytest.raises(ValueError, match=r"must have 2 column\(s\) like the fitted data, got shape \(0, 3\)"):
        KDE(bandwidth=H2).fit(X2).pdf(np.empty((0, 3)))


def _fully_tied(n_distinct: int = 20, copies: int = 3) -> np.ndarray:
    """Every observation recorded ``copies`` times (a join that duplicated rows)."""
    return np.repeat(np.random.default_rng(4).normal(size=(n_distinct, 2)), copies, axis=0)


@pytest.mark.parametrize(
    ("selector", "method"), [(bw.lscv_H, "LSCV_H"), (bw.lscv_diag, r"LSCV \(diagonal\)")]
)
@pytest.mark.parametrize(
    "X", [_fully_tied(), np.round(np.random.default_rng(0).normal(size=(60, 2)))], ids=["repeated rows", "rounded"]
)
def test_lscv_matrix_selectors_on_tied_data_raise_value_error(selector, method, X):
    """Issue 15: lscv_H on tied rows raised numpy's LinAlgError (g(H) -> -inf as H turns
    singular, until exp(theta) underflowed); lscv_diag too.  Now a ValueError saying why and
    what to do, after the TiedDataWarning."""
    with pytest.warns(TiedDataWarning), pytest.raises(
        ValueError, match=rf"{method}: the criterion has no minimum at a positive-definite H: the data repeat values"
    ) as info:
        selector(X)
    assert "jitter" in str(info.value) and "lscv_h" in str(info.value)


def test_kde_lscv_H_on_tied_data_raises_value_error():
    with pytest.warns(TiedDataWarning), pytest.raises(ValueError, match=r"no minimum at a positive-definite H"):
        KDE(bandwidth="lscv_H").fit(_fully_tied())


def test_lscv_h_on_the_same_tied_data_still_answers():
    """The suggested way out works: lscv_h's bounded search warns and returns."""
    with pytest.warns(TiedDataWarning), pytest.warns(LSCVWarning, match="edge of the search range"):
        H = bw.lscv_h(_fully_tied())  # a matrix: the data have 2 columns
    assert np.all(np.linalg.eigvalsh(H) > 0)


def _wide(n: int = 200, d: int = 50) -> np.ndarray:
    return np.random.default_rng(50).normal(size=(n, d))


@pytest.mark.parametrize(
    ("selector", "typical", "others"),
    [(bw.lscv_H, "2.84e+08", "use lscv_diag"), (bw.lscv_diag, "1.91e+04", "use lscv_h or normal_scale")],
)
def test_costly_lscv_search_warns_before_starting(monkeypatch, selector, typical, others):
    """Issue 15: lscv_H on 200 rows with d = 50 ran 12 minutes with no word.  Now a CostWarning
    before the search (here an error: the test stops there, after two evaluations) gives the
    predicted evaluations, the measured time of one and the ways to spend less.  (lscv_H: some
    1.5e6 evaluations of ~2-10 ms, hours; lscv_diag: 19 000, about a minute, so the test lowers
    the threshold to 1 s to stay clear of the machine's speed.)"""
    from parzen.bandwidth import lscv

    monkeypatch.setattr(lscv, "COST_WARNING_SECONDS", 1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", parzen.CostWarning)
        with pytest.raises(parzen.CostWarning) as info:
            selector(_wide(), backend="numpy")
    message = str(info.value)
    assert f"typically takes about {typical} evaluations of g(H)" in message
    assert "19900 pairs x 50 coordinates" in message and "may run about" in message
    assert "max_evaluations=" in message and others in message


def test_predicted_evaluations_model():
    assert bw.predicted_evaluations(2) == 10 * 3**2.4 // 1
    assert 5e4 < bw.predicted_evaluations(8) < 1e5  # 66 000 - 71 000 measured
    assert bw.predicted_evaluations(50, diagonal=True) < bw.predicted_evaluations(7)


def test_ordinary_lscv_searches_do_not_warn_of_cost():
    with warnings.catch_warnings():
        warnings.simplefilter("error", parzen.CostWarning)
        bw.lscv_H(X2)
        bw.lscv_diag(X2)


def test_max_evaluations_caps_the_search_with_a_warning():
    """d = 50, n = 200 capped at 30 evaluations: returns a positive-definite H in well under a
    second an evaluation, and says that it stopped without converging."""
    with pytest.warns(LSCVWarning, match=r"stopped after \d+ evaluations of g\(H\) \(max_evaluations=30\) without converging"):
        H = bw.lscv_H(_wide(), max_evaluations=30, backend="numpy")
    assert H.shape == (50, 50) and np.linalg.eigvalsh(H)[0] > 0


@pytest.mark.parametrize("bad", [0, 1, 2.5, -3, True])
def test_bad_max_evaluations(bad):
    with pytest.raises(ValueError, match=r"max_evaluations must be None or an integer of at least 2"):
        bw.lscv_H(X2, max_evaluations=bad)


def test_progress_reaches_the_lscv_H_optimiser(monkeypatch):
    """progress=True (and KDE(progress=True)) shows the optimiser's iterations with the best g
    and the evaluations made so far."""
    import contextlib

    from parzen.bandwidth import lscv

    seen = []

    class Recorder:
        def advance(self, steps=1.0, **fields):
            seen.append(fields.get("status", ""))

    @contextlib.contextmanager
    def recording_bar(enabled, description, total=None):
        assert enabled and description.startswith("LSCV_H n=40 d=2")
        yield Recorder()

    monkeypatch.setattr(lscv, "progress_bar", recording_bar)
    KDE(bandwidth="lscv_H", progress=True).fit(X2)
    assert len(seen) > 10 and all(" evaluations" in s and s.startswith("g = ") for s in seen)
