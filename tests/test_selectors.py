"""The selectors' one convention (the bandwidth in data units) and their one registry, as used by
KDE and AQP (the command line's use is in test_cli.py)."""

import warnings

import duckdb
import numpy as np
import pandas as pd
import pytest

from parzen import KDE
from parzen import bandwidth as bw
from parzen.aqp import Engine
from parzen.aqp.build import integral_factor
from parzen.bandwidth.registry import AUTO, FORMS, SELECTORS

_rng = np.random.default_rng(16)
X1 = _rng.normal(size=40)
X2 = _rng.normal(size=(40, 2)) @ np.array([[1.0, 0.0], [0.6, 0.8]]) + [3.0, -1.0]
MULTIVARIATE = [name for name, s in SELECTORS.items() if s.supports(2)]


def quiet(f, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return f(*args, **kwargs)


def test_registry_records():
    assert list(SELECTORS) == [
        "plugin", "lscv_h", "lscv_H", "lscv_diag", "plugin_H", "plugin_diag", "scv_H", "scott", "silverman", "normal_scale",
        "isj",
    ]
    for name, selector in SELECTORS.items():
        assert selector.name == name and selector.description
        assert selector.function is getattr(bw, name)
        assert selector.supports(1)
        assert selector.form in (*FORMS, None)
    assert [n for n, s in SELECTORS.items() if not s.supports(2)] == ["plugin", "isj"]
    assert [n for n, s in SELECTORS.items() if s.weighted] == [
        "plugin", "lscv_h", "lscv_H", "lscv_diag", "plugin_H", "plugin_diag", "scv_H", "scott", "silverman", "normal_scale",
    ]
    assert SELECTORS["lscv_H"].options >= {"backend", "dtype", "progress", "start", "max_evaluations"}
    assert SELECTORS["scott"].options == {"weights", "weight_kind", "progress"}  # progress: over the passes of chunked data


def test_registering_a_selector_checks_its_form():
    """A univariate selector has no matrix form, and a form is one of FORMS."""
    with pytest.raises(ValueError, match="form None does not fit max_d=None"):
        bw.Selector("x", bw.scott, "a rule", None)
    with pytest.raises(ValueError, match="form 'sigma' does not fit max_d=1"):
        bw.Selector("x", bw.plugin, "univariate", "sigma", max_d=1)
    with pytest.raises(ValueError, match="form 'banded'"):
        bw.Selector("x", bw.scott, "a rule", "banded")


@pytest.mark.parametrize("name", list(SELECTORS))
@pytest.mark.parametrize("c", [8.0, 0.1])
def test_1d_bandwidth_is_a_float_in_data_units(name, c):
    """h(c x) = |c| h(x): the bandwidth is in the data's units (a shift changes nothing)."""
    h = quiet(bw.select, name, X1)
    assert isinstance(h, float) and h > 0
    assert quiet(bw.select, name, -c * X1 + 5.0) == pytest.approx(c * h, rel=1e-6)


@pytest.mark.parametrize("name", MULTIVARIATE)
@pytest.mark.parametrize("c", [8.0, 0.1])
def test_matrix_bandwidth_is_in_data_units(name, c):
    """H(c X) = c^2 H(X), and H has its selector's form: a multiple of Sigma, diagonal or full."""
    H = quiet(bw.select, name, X2)
    assert isinstance(H, np.ndarray) and H.shape == (2, 2)
    np.testing.assert_allclose(H, H.T)
    assert np.all(np.linalg.eigvalsh(H) > 0)
    np.testing.assert_allclose(quiet(bw.select, name, c * X2 + 1.0), c * c * H, rtol=1e-6)
    form = SELECTORS[name].form
    sigma = np.cov(X2, rowvar=False)
    if form == "sigma":
        np.testing.assert_allclose(H / sigma, np.full((2, 2), H[0, 0] / sigma[0, 0]), rtol=1e-12)
    elif form == "diagonal":
        assert H[0, 1] == H[1, 0] == 0.0
    else:
        assert form == "full" and H[0, 1] != 0.0


def test_lscv_h_is_its_factor_in_data_units():
    """lscv_h = lscv_h_factor * sd in 1-D and lscv_h_factor^2 Sigma for d > 1 (H = h^2 Sigma)."""
    f1, f2 = bw.lscv_h_factor(X1), bw.lscv_h_factor(X2)
    assert bw.lscv_h(X1) == pytest.approx(f1 * np.std(X1, ddof=1), rel=1e-12)
    np.testing.assert_allclose(bw.lscv_h(X2), f2 * f2 * np.cov(X2, rowvar=False), rtol=1e-12)
    assert bw.lscv_h_factor(8.0 * X2 - 3.0) == pytest.approx(f2, rel=1e-12)  # the factor has no units


def test_matrix_selectors_give_h_in_1d():
    """lscv_H and lscv_diag search the 1 x 1 matrix H = h^2 and, by the convention, return h."""
    for name in ("lscv_H", "lscv_diag"):
        h = bw.select(name, X1)
        assert isinstance(h, float)
        assert bw.lscv_H_objective(X1, h * h) == pytest.approx(bw.lscv_h_objective(X1, h / np.std(X1, ddof=1)))
        assert h == pytest.approx(bw.lscv_h(X1), rel=1e-3)  # the same criterion, another optimiser


def test_bandwidth_matrix_is_the_one_conversion():
    np.testing.assert_array_equal(bw.bandwidth_matrix(0.5, 1), [[0.25]])
    np.testing.assert_array_equal(bw.bandwidth_matrix(np.float32(2.0), 1), [[4.0]])
    H = np.array([[2.0, 0.5], [0.5, 1.0]])
    got = bw.bandwidth_matrix(H, 2)
    np.testing.assert_array_equal(got, H)
    assert got is not H
    with pytest.raises(ValueError, match="scalar bandwidth h is the convention for 1-D data only, not for 2 columns"):
        bw.bandwidth_matrix(0.5, 2)
    with pytest.raises(ValueError, match=r"must be 3 x 3, got shape \(2, 2\)"):
        bw.bandwidth_matrix(H, 3)


def test_select_errors_name_what_would_work():
    with pytest.raises(ValueError, match=r"unknown bandwidth 'magic'; choose one of 'plugin', 'lscv_h'"):
        bw.select("magic", X1)
    with pytest.raises(
        ValueError,
        match=r"bandwidth='plugin' is univariate but X has 2 columns; use 'lscv_H', 'plugin_H', 'scv_H', 'lscv_diag', "
        r"'plugin_diag', 'lscv_h', 'scott', 'silverman' or 'normal_scale'",
    ):
        bw.select("plugin", X2)
    with pytest.raises(ValueError, match=r"with weights use 'plugin', 'lscv_h', 'lscv_H', 'lscv_diag', 'plugin_H', 'plugin_diag', 'scv_H', 'scott', 'silverman', 'normal_scale' or a numeric bandwidth"):
        bw.select("isj", X1, weights=np.ones(len(X1)))
    w = np.linspace(1.0, 2.0, 40)
    assert bw.select("scott", X1, weights=w) == bw.scott(X1, weights=w)


def test_select_passes_only_the_options_a_selector_takes():
    assert bw.select("scott", X1, backend="numpy", progress=False) == bw.scott(X1)
    assert bw.select("plugin", X1, scale="minim", backend="numpy") == bw.plugin(X1, scale="minim", backend="numpy")
    with pytest.raises(ValueError, match="backend"):
        bw.select("plugin", X1, backend="no-such-backend")


def test_default_selector():
    assert (bw.default_selector(1), bw.default_selector(2), bw.default_selector(7)) == ("plugin", "normal_scale", "normal_scale")


# --- KDE -----------------------------------------------------------------------------------


def test_kde_accepts_exactly_the_registry_names():
    assert KDE._parameter_constraints["bandwidth"] == (AUTO, *SELECTORS)
    with pytest.raises(ValueError, match="unknown bandwidth 'Scott'"):
        KDE(bandwidth="Scott").fit(X1)


@pytest.mark.parametrize("name", [AUTO, *SELECTORS])
def test_kde_bandwidth_is_the_selectors_answer(name):
    X = X1 if name == AUTO or not SELECTORS[name].supports(2) else X2
    kde = quiet(KDE(bandwidth=name).fit, X)
    expected = quiet(bw.select, bw.default_selector(X.ndim) if name == AUTO else name, X)
    np.testing.assert_allclose(kde.bandwidth_, expected, rtol=1e-12)
    np.testing.assert_allclose(kde.H_, bw.bandwidth_matrix(expected, X.ndim), rtol=1e-12)
    one = quiet(KDE(bandwidth=name).fit, X1)
    assert isinstance(one.bandwidth_, float)
    assert one.H_ == pytest.approx(one.bandwidth_**2)


# --- AQP -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SELECTORS))
def test_aqp_builds_with_every_registered_selector(name):
    """A synopsis's bandwidth is the registry's selector on the sampled values (all 300 rows),
    made a bandwidth for box integrals.  PLUGIN bins every row of the table (the same 300 here) on
    a grid of its own (parzen.aqp.bandwidths): equal within binned PLUGIN's tolerance, 1e-4."""
    con = duckdb.connect(":memory:")
    con.register("frame", pd.DataFrame({"x": np.random.default_rng(3).normal(10.0, 3.0, 300)}))
    con.execute("CREATE TABLE t AS SELECT x FROM frame")
    synopsis = quiet(Engine(con).build, "t", sample=300, bandwidth=name)
    x = np.asarray(synopsis.sample["x"], dtype=np.float64)
    expected = quiet(bw.select, name, x) * integral_factor(x.size)
    assert synopsis.models["x"].bandwidth == pytest.approx(expected, rel=1e-4 if name == "plugin" else 1e-6)
