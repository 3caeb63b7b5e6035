"""The float64 reference against the papers' algorithms and against R (ks / KernSmooth).

Every selector here runs on the NumPy reference ("auto" is pinned to it): the other backends
are tested against the reference in test_backends.py.
"""

import warnings

import numpy as np
import pytest

from parzen import KDE, backends, bandwidth
from parzen.bandwidth import lscv_H_objective

DATASETS = ("faithful", "quakes", "tempb")
RTOL_EXACT = 1e-8


@pytest.fixture(autouse=True)
def reference_backend(monkeypatch):
    monkeypatch.setattr(backends, "_AUTO_ORDER", ("numpy",))


def _columns(name):
    return {"faithful": ("eruptions", "waiting"), "quakes": ("lat", "long", "depth", "mag"),
            "tempb": ("tmin", "tmax")}[name]


@pytest.mark.parametrize("name,column", [(n, c) for n in DATASETS for c in _columns(n)])
def test_plugin_matches_papers_algorithm(datasets, seed_reference, name, column):
    expected = seed_reference[name]["plugin"][column]
    stages = bandwidth.plugin_stages(datasets[name][column], method="exact")
    for key in ("h", "g1", "psi6", "g2", "psi4"):
        assert getattr(stages, key) == pytest.approx(expected[key], rel=RTOL_EXACT), key


@pytest.mark.parametrize("name,column", [(n, c) for n in DATASETS for c in _columns(n)])
def test_plugin_agrees_with_kernsmooth_dpik(datasets, ks_reference, name, column):
    r = ks_reference[name]["univariate"][column]
    x = datasets[name][column]
    assert bandwidth.plugin(x, scale="sd") == pytest.approx(r["dpik_stdev"], rel=0.01)
    assert bandwidth.plugin(x, scale="minim") == pytest.approx(r["dpik_minim"], rel=0.01)


def test_plugin_scale_minim_differs_on_clustered_data(datasets):
    """docs/departures.md, item 2: on quakes$long the IQR-based scale changes h by tens of percent."""
    x = datasets["quakes"]["long"]
    assert bandwidth.plugin(x, scale="minim") < 0.8 * bandwidth.plugin(x, scale="sd")


@pytest.mark.parametrize("name", DATASETS)
def test_lscv_h_objective_matches_papers_eq43(datasets, seed_reference, name):
    ref = seed_reference[name]
    X = datasets[name].to_numpy()[: ref["lscv_rows"]]
    got = bandwidth.lscv_h_objective(X, np.array(ref["lscv_h_objective"]["h"]))
    np.testing.assert_allclose(got, ref["lscv_h_objective"]["g"], rtol=RTOL_EXACT)
    scalar = bandwidth.lscv_h_objective(X, ref["lscv_h_objective"]["h"][2])
    assert isinstance(scalar, float)
    assert scalar == pytest.approx(ref["lscv_h_objective"]["g"][2], rel=RTOL_EXACT)


@pytest.mark.parametrize("name", DATASETS)
def test_lscv_H_objective_matches_papers_eq32(datasets, seed_reference, name):
    ref = seed_reference[name]
    X = datasets[name].to_numpy()[: ref["lscv_rows"]]
    got = lscv_H_objective(X, ref["lscv_H_objective"]["H"])
    assert got == pytest.approx(ref["lscv_H_objective"]["g"], rel=RTOL_EXACT)


@pytest.mark.parametrize("name", DATASETS)
def test_normal_scale_is_the_reference_start_matrix(datasets, seed_reference, name):
    """The seed's H is the normal-scale matrix (eq. 37 with docs/departures.md, item 3)."""
    ref = seed_reference[name]
    X = datasets[name].to_numpy()[: ref["lscv_rows"]]
    np.testing.assert_allclose(bandwidth.normal_scale(X), ref["lscv_H_objective"]["H"], rtol=1e-12)


@pytest.mark.parametrize("name", DATASETS)
def test_kde_pdf_matches_papers_eq6(datasets, seed_reference, name):
    ref = seed_reference[name]
    X = datasets[name].to_numpy()[: ref["lscv_rows"]]
    kde = KDE(bandwidth=np.array(ref["kde_pdf"]["H"])).fit(X)
    np.testing.assert_allclose(kde.pdf(np.array(ref["kde_pdf"]["query"])), ref["kde_pdf"]["pdf"], rtol=RTOL_EXACT)


@pytest.mark.parametrize("column", ["eruptions", "waiting"])
def test_lscv_h_agrees_with_ks_hlscv_on_faithful(datasets, ks_reference, column):
    """Within 2 %: ks normalises the leave-one-out term by 1/(n(n-1)) (docs/departures.md, item 6)."""
    x = datasets["faithful"][column]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # faithful is recorded to a few digits: ties
        h = bandwidth.lscv_h(x)  # in data units, as ks reports it
    assert h == pytest.approx(ks_reference["faithful"]["univariate"][column]["hlscv"], rel=0.02)


def test_lscv_h_refinement_beats_the_grid(datasets):
    X = datasets["faithful"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        coarse = bandwidth.lscv_h_factor(X, refine=False)
        fine = bandwidth.lscv_h_factor(X)
    assert bandwidth.lscv_h_objective(X, fine) <= bandwidth.lscv_h_objective(X, coarse)
    h0 = bandwidth.reference_h0(len(X), 2)
    step = (4 * h0 - h0 / 4) / 149
    assert abs(fine - coarse) <= step


@pytest.mark.parametrize("selector,key", [(bandwidth.lscv_H, "Hlscv"), (bandwidth.lscv_diag, "Hlscv_diag")])
def test_lscv_matrix_reaches_ks_optimum_on_faithful(datasets, ks_reference, selector, key):
    X = datasets["faithful"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        H = selector(X)
    H_ks = np.array(ks_reference["faithful"][key])
    assert lscv_H_objective(X, H) <= lscv_H_objective(X, H_ks) + 1e-12
    np.testing.assert_allclose(H, H.T)
    assert np.all(np.linalg.eigvalsh(H) > 0)
    # The papers' n^-2 normalisation moves the minimiser by O(1/n) only (docs/departures.md, item 6).
    np.testing.assert_allclose(np.diag(H), np.diag(H_ks), rtol=0.05)
    if key == "Hlscv_diag":
        assert H[0, 1] == 0.0


def test_lscv_h_on_a_large_tie_free_sample_is_near_normal_scale():
    """For normal data the LSCV_h optimum (sphered) approaches the normal-reference h0."""
    X = np.random.default_rng(7).multivariate_normal([0, 0, 0], [[1, .5, 0], [.5, 2, .3], [0, .3, 1]], 1500)
    h = bandwidth.lscv_h_factor(X)
    assert 0.6 * bandwidth.reference_h0(1500, 3) < h < 1.6 * bandwidth.reference_h0(1500, 3)
