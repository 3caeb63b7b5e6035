"""The multivariate plug-in (plugin_H, plugin_diag) and SCV (scv_H) selectors: their pair-sum
primitive on every host backend against the float64 reference, their functionals against closed
forms, and their answers against R ks 1.14 (tests/refdata/ks_plugin_reference.json, made by
tests/refdata/ks_plugin_reference.R)."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

from parzen import backends
from parzen import bandwidth as bw
from parzen.backends import resolve_backend
from parzen.backends.cpu import CpuBackend
from parzen.backends.reference import NumpyBackend
from parzen.bandwidth import functionals as F
from parzen.bandwidth import plugin_matrix as P
from parzen.bandwidth import scv as S
from parzen.datasets import load

REFERENCE = json.loads((Path(__file__).parent / "refdata" / "ks_plugin_reference.json").read_text())
_rng = np.random.default_rng(20)
Y3 = _rng.normal(size=(300, 3)) @ np.array([[1.0, 0.3, 0.0], [0.0, 1.0, 0.5], [0.0, 0.0, 0.7]])
ALPHAS3 = np.array([[6, 0, 0], [2, 2, 2], [0, 1, 1], [4, 2, 0], [0, 0, 0], [3, 1, 0], [1, 1, 6]])


def data(name: str) -> np.ndarray:
    return load(name).to_numpy()[: REFERENCE[name]["rows"]]


def test_hermite_pair_sums_of_the_cpu_backend_equal_the_reference():
    w = _rng.random(len(Y3))
    reference = NumpyBackend().pair_sum_hermite(Y3, ALPHAS3, w)
    scale = np.abs(reference).max()
    np.testing.assert_allclose(CpuBackend().pair_sum_hermite(Y3, ALPHAS3, w), reference, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(
        CpuBackend().pair_sum_hermite(Y3, ALPHAS3, w, dtype=np.float32), reference, rtol=0, atol=1e-5 * scale
    )
    unweighted = NumpyBackend().pair_sum_hermite(Y3, ALPHAS3)
    np.testing.assert_allclose(CpuBackend().pair_sum_hermite(Y3, ALPHAS3), unweighted, rtol=0, atol=1e-12 * scale)


@pytest.mark.skipif("gpu" not in backends.available(), reason="the gpu backend is not available")
@pytest.mark.parametrize("weighted", [False, True])
def test_hermite_pair_sums_of_the_gpu_backend_equal_the_reference(weighted):
    """Small under the Triton interpreter (CI); three tiles, so the triangle's diagonal and off-diagonal
    tiles and the pads are all met."""
    Y = Y3[:40] + 5.0  # an offset the sums must not see
    w = _rng.random(len(Y)) if weighted else None
    reference = NumpyBackend().pair_sum_hermite(Y, ALPHAS3, w)
    scale = np.abs(reference).max()
    gpu = resolve_backend("gpu")
    np.testing.assert_allclose(gpu.pair_sum_hermite(Y, ALPHAS3, w, dtype=np.float64), reference, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(gpu.pair_sum_hermite(Y, ALPHAS3, w), reference, rtol=0, atol=1e-5 * scale)


def test_hermite_pair_sums_are_the_pairs_sum():
    """A brute-force sum over i < j of w_i w_j exp(-|u|^2/2) prod He_alpha_k(u_k) (He_4 = u^4 - 6u^2 + 3)."""
    Y, w = Y3[:30], _rng.random(30)
    expected = sum(
        w[i] * w[j] * math.exp(-0.5 * float(u @ u)) * (u[0] ** 4 - 6 * u[0] ** 2 + 3) * (u[1] ** 2 - 1)
        for i in range(30) for j in range(i + 1, 30) for u in [Y[i] - Y[j]]
    )
    for backend in (NumpyBackend(), CpuBackend()):
        assert backend.pair_sum_hermite(Y, np.array([[4, 2, 0]]), w)[0] == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("alphas", [[[3, 0, 0]], [[10, 0, 0]], [[2, 0]], [[-2, 2, 2]]])
def test_hermite_pair_sums_reject_bad_multi_indices(alphas):
    with pytest.raises(ValueError, match="even total order at most 8"):
        CpuBackend().pair_sum_hermite(Y3, np.array(alphas))


def test_psi_hat_is_the_mean_of_the_derivative_of_the_pilot_density():
    """Psi_(2,0) with G = g^2 I: n^-2 sum_{i,j} phi_G(z) (z_1^2 / g^4 - 1 / g^2), z = x_i - x_j."""
    X, g = Y3[:50, :2], 0.7
    z = X[:, None, :] - X[None, :, :]
    phi = np.exp(-0.5 * (z * z).sum(axis=2) / g**2) / (2 * np.pi * g * g)
    expected = (phi * (z[..., 0] ** 2 / g**4 - 1 / g**2)).mean()
    assert F.psi_hat(NumpyBackend(), X, g, np.array([[2, 0]]))[0] == pytest.approx(expected, rel=1e-12)


def test_multi_indices_are_listed_in_the_order_of_ks():
    assert F.multi_indices(2, 6).tolist() == [[6, 0], [5, 1], [4, 2], [3, 3], [2, 4], [1, 5], [0, 6]]
    assert len(F.multi_indices(4, 8)) == math.comb(11, 3)
    tensor = F.full_tensor(np.arange(5.0), 2, 4)
    assert tensor[0, 1, 0, 1] == tensor[1, 1, 0, 0] == 2.0 and tensor[1, 1, 1, 0] == 3.0


def test_normal_functionals_and_nu_have_their_closed_forms():
    """Psi_(4,0) of N(0, I_2) = 3 / (16 pi) (Wand & Jones 1995, eq. 4.?); nu_2(I_d) = d^2 + 2d."""
    assert F.psi_normal_scale(np.array([[4, 0]]), np.eye(2))[0] == pytest.approx(3 / (16 * np.pi), rel=1e-14)
    assert F.psi_normal_scale(np.array([[2, 2]]), np.eye(2))[0] == pytest.approx(1 / (16 * np.pi), rel=1e-14)
    assert F.nu(2, np.eye(3)) == pytest.approx(15.0)
    assert F.nu(4, np.eye(1)) == pytest.approx(105.0)  # E z^8 for z ~ N(0, 1) is 105 = nu_4(1) with r! 2^r scaling


@pytest.mark.parametrize("follow_ks", [True, False])
def test_the_functionals_and_objectives_on_the_cpu_backend_equal_the_reference(follow_ks):
    X = data("faithful")
    sample = P._sample(X, None, "sphere")
    cpu, ref = resolve_backend("cpu"), resolve_backend("numpy")
    psi_cpu = P.psi4_matrix(sample, backend=cpu, dtype=None, follow_ks=follow_ks)
    psi_ref = P.psi4_matrix(sample, backend=ref, dtype=None, follow_ks=follow_ks)
    np.testing.assert_allclose(psi_cpu, psi_ref, rtol=1e-10)
    H = P.normal_scale_start(sample)
    G = 0.3 * np.eye(2)
    assert S.scv_objective(H, G, cpu, sample) == pytest.approx(S.scv_objective(H, G, ref, sample), rel=1e-10)
    Y4 = P._sample(data("quakes")[:200], None, "sphere").Y
    assert F.dscalar_pilot(cpu, Y4, 200) == pytest.approx(F.dscalar_pilot(ref, Y4, 200), rel=1e-10)


@pytest.mark.parametrize("name", ["faithful", "quakes", "tempb"])
@pytest.mark.parametrize(("selector", "key"), [("plugin_H", "Hpi"), ("plugin_diag", "Hpi_diag")])
def test_plugin_matrices_are_those_of_ks(name, selector, key):
    """Within 1 % of ks::Hpi / ks::Hpi.diag (binned = FALSE), entry by entry relative to the diagonal scale."""
    expected = np.array(REFERENCE[name][key])
    H = bw.select(selector, data(name), backend="cpu")
    scale = np.sqrt(np.outer(np.diag(expected), np.diag(expected)))
    np.testing.assert_allclose(H / scale, expected / scale, rtol=0, atol=1e-2)


@pytest.mark.parametrize("name", ["faithful", "tempb"])
def test_the_formula_pilot_is_that_of_ks_with_its_stage_two_index_corrected(name):
    """follow_ks=False against ks with gsamse reading Psi_(alpha + 2 e_j) (the R script's gsamse_formula)."""
    for selector, key in ((bw.plugin_H, "Hpi_formula"), (bw.plugin_diag, "Hpi_diag_formula")):
        expected = np.array(REFERENCE[name][key])
        scale = np.sqrt(np.outer(np.diag(expected), np.diag(expected)))
        np.testing.assert_allclose(selector(data(name), follow_ks=False) / scale, expected / scale, rtol=0, atol=1e-2)


@pytest.mark.parametrize("name", ["faithful", "tempb"])
def test_scv_matrix_is_that_of_ks(name):
    """Within 1 % of ks::Hscv (binned = FALSE; ks's d = 2 pilot matrix is binned, parzen's exact)."""
    expected = np.array(REFERENCE[name]["Hscv"])
    H = bw.select("scv_H", data(name), backend="cpu")
    scale = np.sqrt(np.outer(np.diag(expected), np.diag(expected)))
    np.testing.assert_allclose(H / scale, expected / scale, rtol=0, atol=1e-2)


def test_selectors_need_d_plus_2_rows():
    with pytest.raises(ValueError, match="at least d \\+ 2 = 4 rows"):
        bw.plugin_H(Y3[:3, :2])


COUNTS = np.random.default_rng(5).integers(0, 4, size=120)
X_SMALL = load("faithful").to_numpy()[:120]


@pytest.mark.parametrize("backend", ["numpy", "cpu"])
def test_weighted_functionals_equal_those_of_rows_repeated_by_integer_weights(backend):
    """Psi_hat (orders 4 and 6) and SCV's Q with integer weights equal the unweighted ones of the data
    with each row repeated that many times (exact path, 1e-10).  The selectors differ from the
    repeated data's through n and the covariance's ddof correction, both Kish's effective size with
    weights (as the weighted rules of thumb), not the number of repeated rows."""
    be = resolve_backend(backend)
    Y = X_SMALL / X_SMALL.std(axis=0)
    repeated = np.repeat(Y, COUNTS, axis=0)
    w = COUNTS.astype(float)
    for order, g in ((4, 0.6), (6, 0.8)):
        alphas = F.multi_indices(2, order)
        np.testing.assert_allclose(F.psi_hat(be, Y, g, alphas, w), F.psi_hat(be, repeated, g, alphas), rtol=1e-10)
    Sigma = np.array([[0.3, 0.1], [0.1, 0.2]])
    assert S.gaussian_pair_mean(be, Y, Sigma, w) == pytest.approx(S.gaussian_pair_mean(be, repeated, Sigma), rel=1e-10)


@pytest.mark.parametrize("selector", [bw.plugin_H, bw.plugin_diag, bw.scv_H])
def test_equal_weights_change_nothing_and_zero_weights_drop_rows(selector):
    X = X_SMALL[:60]
    plain = selector(X, backend="cpu")
    np.testing.assert_allclose(selector(X, weights=np.full(60, 2.5), backend="cpu"), plain, rtol=1e-6)
    w = np.ones(70)
    w[60:] = 0.0
    padded = np.vstack([X, X_SMALL[60:70] + 50.0])
    np.testing.assert_allclose(selector(padded, weights=w, backend="cpu"), plain, rtol=1e-6)


@pytest.mark.parametrize(
    ("weights", "message"),
    [(-np.ones(60), "finite and non-negative"), (np.full(60, np.nan), "finite and non-negative"),
     (np.ones(59), "one per row"), (np.r_[np.ones(3), np.zeros(57)], "only 3 rows have a positive weight")],
)
def test_bad_weights_are_named(weights, message):
    with pytest.raises(ValueError, match=message):
        bw.plugin_H(X_SMALL[:60], weights=weights)


@pytest.mark.parametrize("scale", ["sd", "minim"])
def test_weighted_plugin_with_equal_weights_is_the_unweighted_one_and_zero_weights_drop_rows(scale):
    x = load("faithful")["waiting"].to_numpy()
    plain = bw.plugin(x, scale=scale, method="exact", backend="cpu")
    assert bw.plugin(x, weights=np.full(x.size, 0.3), scale=scale, method="exact", backend="cpu") == pytest.approx(plain, rel=1e-10)
    w = np.r_[np.ones(x.size), np.zeros(5)]
    padded = np.r_[x, np.full(5, 500.0)]
    assert bw.plugin(padded, weights=w, scale="sd", method="exact", backend="numpy") == pytest.approx(bw.plugin(x, method="exact"), rel=1e-10)


def test_weighted_plugin_functionals_are_those_of_repeated_rows():
    """With integer weights, the weighted Psi_6 and Psi_4 (at the stages' pilots) equal psi_functional
    of the rows repeated that many times (1e-10): sum_{a,b} c_a c_b K(x_a - x_b) = N^2 sum w_a w_b K.
    The stages' pilots and h differ from the repeated rows' through n (Kish's, not N)."""
    x = load("faithful")["eruptions"].to_numpy()[:100]
    counts = np.random.default_rng(3).integers(1, 4, size=100)
    stages = bw.plugin_stages(x, weights=counts, method="exact", backend="cpu")
    repeated = np.repeat(x, counts)
    assert stages.psi6 == pytest.approx(bw.psi_functional(repeated, 6, stages.g1, backend="numpy"), rel=1e-10)
    assert stages.psi4 == pytest.approx(bw.psi_functional(repeated, 4, stages.g2, backend="numpy"), rel=1e-10)


def test_weighted_plugin_binned_is_the_unweighted_one_for_equal_weights():
    """Binned weighted PLUGIN (weighted linear binning) with equal weights is the binned unweighted h."""
    x = load("faithful")["waiting"].to_numpy()
    stages = bw.plugin_stages(x, weights=np.full(x.size, 2.5), method="binned")
    assert stages.method == "binned"
    assert stages.h == pytest.approx(bw.plugin(x, method="binned"), rel=1e-12)


@pytest.mark.parametrize("X", [load("faithful")["waiting"].to_numpy()[:150], load("faithful").to_numpy()[:150]], ids=["1-D", "2-D"])
def test_weighted_lscv_h_with_equal_weights_is_the_unweighted_one_and_zero_weights_drop_rows(X):
    plain = bw.lscv_h(X, method="exact", backend="cpu")
    np.testing.assert_allclose(bw.lscv_h(X, weights=np.full(len(X), 4.0), method="exact", backend="cpu"), plain, rtol=1e-8)
    w = np.r_[np.ones(len(X)), np.zeros(3)]
    padded = np.r_[X, X[:3] + 100.0]
    np.testing.assert_allclose(bw.lscv_h(padded, weights=w, method="exact", backend="numpy"), plain, rtol=1e-8)


def test_weighted_lscv_h_weights_count_against_the_rest():
    """Doubling the weight of one half moves h towards what that half alone gives (h is not the unweighted one)."""
    x = load("faithful")["waiting"].to_numpy()[:150]
    w = np.where(np.arange(150) < 75, 5.0, 1.0)
    assert bw.lscv_h(x, weights=w, method="exact") != pytest.approx(bw.lscv_h(x, method="exact"), rel=1e-3)


def test_weighted_lscv_h_binned_with_equal_weights_is_the_unweighted_binned_one():
    x = load("faithful")["waiting"].to_numpy()
    plain = bw.lscv_h(x, method="binned")
    assert bw.lscv_h(x, weights=np.full(x.size, 3.0), method="binned") == pytest.approx(plain, rel=1e-10)
    with pytest.raises(ValueError, match="finite and non-negative"):
        bw.lscv_h(x, weights=-np.ones(x.size))
