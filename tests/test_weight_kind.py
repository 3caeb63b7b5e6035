"""Frequency weights (``weight_kind="frequency"``) give the selectors' answers on the data with
each row repeated w_i times (issue 20, item 2's target: 1e-10); probability weights stay Kish's."""

import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parzen import KDE
from parzen import bandwidth as bw
from parzen.backends import resolve_backend
from parzen.bandwidth.lscv import LSCVWarning, _criterion, _weighted_lscv_sample, lscv_h_objective
from parzen.bandwidth.plugin_matrix import _sample
from parzen.bandwidth.scv import scv_objective
from parzen.bandwidth.weight_kind import frequency_quantiles, sample_size, tied_pairs, weighted_covariance

NUMPY = resolve_backend("numpy")
#: Small samples: the replicated data's exact pair sums stay quick on the reference backend.
cases = st.tuples(
    st.integers(min_value=0, max_value=2**31 - 1),  # seed of the data
    st.integers(min_value=6, max_value=14),  # distinct rows
)
counts_of = st.integers(min_value=1, max_value=4)
PROPERTY = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _sample_data(seed: int, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.5, 3.0, size=d) + rng.normal(size=d) * 10
    return X, rng.integers(1, 5, size=n).astype(np.float64)


def _relative(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


@PROPERTY
@given(cases, st.sampled_from(["sd", "minim"]))
def test_plugin_frequency_weights_equal_replication(case, scale):
    seed, n = case
    X, w = _sample_data(seed, n, 1)
    weighted = bw.plugin(X[:, 0], weights=w, weight_kind="frequency", scale=scale, backend="numpy", method="exact")
    replicated = bw.plugin(np.repeat(X[:, 0], w.astype(int)), scale=scale, backend="numpy", method="exact")
    assert _relative(weighted, replicated) <= 1e-10


@PROPERTY
@given(cases, st.sampled_from([1, 2, 3]))
def test_lscv_h_frequency_weights_equal_replication(case, d):
    """The criterion at any h, and the selector (replicated rows are tied: the minimum may sit on
    the search range's edge, the same edge for both)."""
    seed, n = case
    X, w = _sample_data(seed, n, d)
    R = np.repeat(X, w.astype(int), axis=0)
    n_e, d_, _, units, L, pair_sums, _ = _weighted_lscv_sample(X, w, "exact", NUMPY, None, "frequency")
    h = np.array([0.2, 0.5, 1.3])
    weighted = _criterion(pair_sums(L, h), n_e, d_, h, float(np.prod(np.diag(L))))  # in the standardised units
    assert _relative(weighted, lscv_h_objective(R / units, h, backend="numpy")) <= 1e-10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LSCVWarning)
        warnings.simplefilter("ignore", UserWarning)  # repeated rows
        a = bw.lscv_h_factor(X, weights=w, weight_kind="frequency", backend="numpy", method="exact")
        b = bw.lscv_h_factor(R, backend="numpy", method="exact")
    assert _relative(a, b) <= 1e-10


@PROPERTY
@given(cases, st.sampled_from([2, 3]), st.sampled_from(["plugin_H", "plugin_diag"]))
def test_plugin_matrices_frequency_weights_equal_replication(case, d, name):
    seed, n = case
    X, w = _sample_data(seed, n + d, d)
    selector = getattr(bw, name)
    weighted = selector(X, weights=w, weight_kind="frequency", backend="numpy")
    replicated = selector(np.repeat(X, w.astype(int), axis=0), backend="numpy")
    assert _relative(weighted, replicated) <= 1e-10


@PROPERTY
@given(cases, st.sampled_from([2, 3]))
def test_scv_frequency_weights_equal_replication(case, d):
    """The SCV criterion to 1e-10 at any (H, G); the selected H to 1e-7, where BFGS stops (its
    gradient tolerance: the same objective rounded differently ends a few steps elsewhere)."""
    seed, n = case
    X, w = _sample_data(seed, n + d, d)
    R = np.repeat(X, w.astype(int), axis=0)
    weighted, replicated = _sample(X, w, "sphere", "frequency"), _sample(R, None, "sphere")
    assert _relative(weighted.Y @ weighted.root, X) <= 1e-12
    H, G = np.eye(d) * 0.3 + 0.05, np.eye(d) * 0.2
    a = scv_objective(H, G, NUMPY, weighted)
    b = scv_objective(H, G, NUMPY, replicated)
    assert _relative(a, b) <= 1e-10
    assert _relative(bw.scv_H(X, weights=w, weight_kind="frequency", backend="numpy"), bw.scv_H(R, backend="numpy")) <= 1e-7


def test_probability_weights_are_the_default_and_keep_kish():
    X, w = _sample_data(1, 20, 2)
    assert np.array_equal(bw.plugin_H(X, weights=w, backend="numpy"),
                          bw.plugin_H(X, weights=w, weight_kind="probability", backend="numpy"))
    assert sample_size(w, "probability") == pytest.approx(w.sum() ** 2 / (w @ w), rel=1e-15)
    assert sample_size(w, "frequency") == w.sum()
    assert tied_pairs(w, "probability") == 0.0
    # a scale changes nothing for probability weights, and n and the answer for frequency weights
    assert bw.plugin(X[:, 0], weights=3 * w, backend="numpy") == pytest.approx(bw.plugin(X[:, 0], weights=w, backend="numpy"), rel=1e-12)
    assert bw.plugin(X[:, 0], weights=3 * w, weight_kind="frequency", backend="numpy") < bw.plugin(
        X[:, 0], weights=w, weight_kind="frequency", backend="numpy")


def test_frequency_helpers_match_numpy_on_replicated_data():
    rng = np.random.default_rng(5)
    x, w = rng.normal(size=15), rng.integers(1, 6, size=15).astype(np.float64)
    r = np.repeat(x, w.astype(int))
    probs = [0.0, 0.1, 0.25, 0.5, 0.75, 0.99, 1.0]
    np.testing.assert_allclose(frequency_quantiles(x, w, probs), np.percentile(r, 100 * np.array(probs)), rtol=1e-13)
    np.testing.assert_allclose(weighted_covariance(x[:, None], w, "frequency"), np.atleast_2d(np.cov(r)), rtol=1e-13)
    assert tied_pairs(w, "frequency") * w.sum() ** 2 == pytest.approx(sum(c * (c - 1) / 2 for c in w))


def test_bad_weight_kind_and_frequency_sums_are_errors():
    X, w = _sample_data(2, 12, 2)
    with pytest.raises(ValueError, match="weight_kind"):
        bw.plugin_H(X, weights=w, weight_kind="counts", backend="numpy")
    with pytest.raises(ValueError, match="sum to more than 1"):
        bw.plugin(X[:, 0], weights=w / (2 * w.sum()), weight_kind="frequency", backend="numpy")


def _weighted_lscv_criterion(X: np.ndarray, w: np.ndarray, H: np.ndarray) -> float:
    """g(H) = |H|^-1/2 [2 sum_{i<j} w_i w_j T + sum w_i^2 (4 pi)^(-d/2)], w normalised, by brute force."""
    d = X.shape[1]
    w = w / w.sum()
    i, j = np.triu_indices(len(X), 1)
    diff = X[i] - X[j]
    s = np.einsum("pa,ab,pb->p", diff, np.linalg.inv(H), diff)
    c4, c2 = (4 * np.pi) ** (-d / 2), (2 * np.pi) ** (-d / 2)
    T = c4 * np.exp(-s / 4) - 2 * c2 * np.exp(-s / 2)
    return float((2 * np.sum(w[i] * w[j] * T) + np.sum(w * w) * c4) / np.sqrt(np.linalg.det(H)))


@pytest.mark.parametrize("name", ["lscv_H", "lscv_diag"])
def test_weighted_lscv_matrices(name):
    """Equal weights give the unweighted H; other weights an H that minimises the weighted
    criterion (lower than at nearby matrices); frequency counts above 1 are tied rows, a
    ValueError as for the replicated data."""
    selector = getattr(bw, name)
    rng = np.random.default_rng(11)
    X = rng.normal(size=(50, 2)) @ np.array([[1.0, 0.6], [0.0, 0.8]])
    unweighted = selector(X, backend="numpy", method="exact")
    np.testing.assert_allclose(selector(X, weights=np.full(50, 2.5), backend="numpy", method="exact"), unweighted, rtol=1e-10)
    np.testing.assert_allclose(
        selector(X, weights=np.ones(50), weight_kind="frequency", backend="numpy", method="exact"), unweighted, rtol=1e-10
    )
    w = rng.uniform(0.2, 2.0, size=50)
    H = selector(X, weights=w, backend="numpy", method="exact")
    assert np.max(np.abs(H - unweighted)) > 1e-3 * np.max(np.abs(unweighted))  # the weights matter
    best = _weighted_lscv_criterion(X, w, H)
    steps = [np.diag([1.05, 1.0]), np.diag([1.0, 0.95]), np.eye(2) * 1.05, np.eye(2) * 0.95]
    if name == "lscv_H":
        steps.append(np.array([[1.0, 0.05], [0.05, 1.0]]))
    for step in steps:
        assert best < _weighted_lscv_criterion(X, w, step @ H @ step)
    with pytest.raises(ValueError, match="no minimum"):
        selector(X, weights=rng.integers(1, 3, size=50), weight_kind="frequency", backend="numpy", method="exact")


@PROPERTY
@given(cases, st.sampled_from(["scott", "silverman", "normal_scale"]), st.sampled_from([1, 2]))
def test_rules_of_thumb_frequency_weights_equal_replication(case, name, d):
    """Scott, Silverman (its weighted quartiles too) and the normal scale: n = sum w and the
    replicated data's covariance."""
    seed, n = case
    X, w = _sample_data(seed, n, d)
    rule = getattr(bw, name)
    weighted = rule(X if d > 1 else X[:, 0], weights=w, weight_kind="frequency")
    replicated = rule(np.repeat(X, w.astype(int), axis=0) if d > 1 else np.repeat(X[:, 0], w.astype(int)))
    assert _relative(weighted, replicated) <= 1e-10


@PROPERTY
@given(cases, st.sampled_from(["scott", "silverman", "normal_scale", "plugin"]), st.floats(min_value=1e-3, max_value=1e3))
def test_probability_weights_are_scale_free_and_equal_weights_are_unweighted(case, name, scale):
    seed, n = case
    x, w = _sample_data(seed, n, 1)
    x = x[:, 0]
    rule = getattr(bw, name)
    options = {"backend": "numpy"} if name == "plugin" else {}
    assert _relative(rule(x, weights=scale * w, **options), rule(x, weights=w, **options)) <= 1e-10
    assert _relative(rule(x, weights=np.full(n, scale), **options), rule(x, **options)) <= 1e-10


@PROPERTY
@given(cases, st.sampled_from(["sd", "minim"]))
def test_binned_plugin_frequency_weights_equal_replication(case, scale):
    """Linear binning adds w_i where the replicated data add w_i ones: the same counts, the same
    grid, the same binned h (to rounding)."""
    seed, n = case
    x, w = _sample_data(seed, 20 * n, 1)
    weighted = bw.plugin_stages(x[:, 0], weights=w, weight_kind="frequency", scale=scale, method="binned")
    replicated = bw.plugin_stages(np.repeat(x[:, 0], w.astype(int)), scale=scale, method="binned")
    assert weighted.grid_size == replicated.grid_size
    assert _relative(weighted.h, replicated.h) <= 1e-10


def test_binned_weighted_plugin_is_near_the_exact_one_and_auto_bins_past_the_limit():
    rng = np.random.default_rng(4)
    x = np.r_[rng.normal(size=700), rng.normal(4.0, 0.5, size=300)]
    w = rng.uniform(0.2, 3.0, size=x.size)
    exact = bw.plugin(x, weights=w, method="exact", backend="numpy")
    binned = bw.plugin_stages(x, weights=w, method="binned", tolerance=1e-5)
    assert binned.h == pytest.approx(exact, rel=1e-5)
    chosen = bw.selection("plugin", x, weights=w, backend="cpu")  # n = 1000 > the cpu's exact limit
    assert chosen.method == "binned" and chosen.value == pytest.approx(exact, rel=1e-4)


def test_chunked_frequency_weights_column_equals_replication():
    from parzen.binned import ArrayChunks

    X, w = _sample_data(3, 40, 2)
    R = np.repeat(X, w.astype(int), axis=0)
    for name in ("scott", "normal_scale"):
        got = bw.select(name, ArrayChunks(X, w, chunk_rows=7), weight_kind="frequency")
        assert _relative(got, bw.select(name, R)) <= 1e-10


@pytest.mark.parametrize("name", ["scott", "silverman", "normal_scale", "plugin", "lscv_h", "plugin_H"])
def test_fractional_frequency_weights_are_refused_naming_the_fix(name):
    X, w = _sample_data(6, 30, 1 if name in ("plugin", "silverman") else 2)
    w[3] = 1.5
    with pytest.raises(ValueError, match=r"must be whole numbers, got 1\.5.*weight_kind='probability'"):
        bw.select(name, X, weights=w, weight_kind="frequency", backend="numpy", method="exact")


@pytest.mark.parametrize(("bandwidth", "d"), [("auto", 1), ("plugin", 1), ("silverman", 1), ("lscv_h", 2), ("plugin_H", 2),
                                              ("scott", 2), ("auto", 2)])
def test_kde_frequency_weights_select_and_estimate_as_the_replicated_data(bandwidth, d):
    """KDE(weight_kind="frequency").fit(X, weights=w) has the replicated data's bandwidth and density."""
    X, w = _sample_data(8, 40, d)
    X = X if d > 1 else X[:, 0]
    R = np.repeat(X, w.astype(int), axis=0)
    Q = np.linspace(-3.0, 3.0, 7)[:, None] * np.ones(d) + np.mean(X, axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # lscv_h on the replicated (tied) rows
        weighted = KDE(bandwidth=bandwidth, weight_kind="frequency", backend="numpy", method="exact").fit(X, weights=w)
        replicated = KDE(bandwidth=bandwidth, backend="numpy", method="exact").fit(R)
    assert _relative(weighted.H_, replicated.H_) <= 1e-10
    assert _relative(weighted.pdf(Q), replicated.pdf(Q)) <= 1e-10


def test_kde_probability_weights_are_the_default_and_scale_free():
    X, w = _sample_data(9, 60, 1)
    a = KDE(bandwidth="plugin", backend="numpy").fit(X, weights=w)
    assert _relative(a.H_, KDE(bandwidth="plugin", backend="numpy", weight_kind="probability").fit(X, weights=50 * w).H_) <= 1e-10
    assert _relative(a.bandwidth_, bw.plugin(X, weights=w, backend="numpy")) <= 1e-12
    assert KDE().get_params()["weight_kind"] == "probability"


def test_kde_bad_weight_kind_and_counts_name_the_fix():
    X, w = _sample_data(10, 30, 1)
    with pytest.raises(ValueError, match="weight_kind"):
        KDE(weight_kind="counts").fit(X, weights=w)
    with pytest.raises(ValueError, match="whole numbers.*weight_kind='probability'"):
        KDE(bandwidth=0.5, weight_kind="frequency").fit(X, weights=w + 0.25)


@pytest.mark.parametrize("weight_kind", ["probability", "frequency"])
@pytest.mark.parametrize("scale", ["sd", "minim"])
def test_chunked_weighted_plugin_equals_the_in_memory_binned_one(weight_kind, scale):
    """A weights column of data served in chunks: the same counts, n and sigma as weights= in memory
    (scale="minim": quartiles from the binned counts, within their grid's spacing)."""
    from parzen.binned import ArrayChunks

    rng = np.random.default_rng(13)
    x = np.r_[rng.normal(size=1500), rng.normal(3.0, 0.7, size=500)]
    w = rng.integers(1, 4, size=x.size).astype(np.float64)
    chunked = bw.plugin_stages(ArrayChunks(x, w, chunk_rows=300), weight_kind=weight_kind, scale=scale)
    memory = bw.plugin_stages(x, weights=w, weight_kind=weight_kind, scale=scale, method="binned")
    assert chunked.method == "binned"
    assert _relative(chunked.h, memory.h) <= (1e-10 if scale == "sd" else 1e-4)
    if weight_kind == "frequency" and scale == "sd":
        assert _relative(chunked.h, bw.plugin(np.repeat(x, w.astype(int)), method="binned")) <= 1e-10


@PROPERTY
@given(cases, st.sampled_from([1, 2]))
def test_binned_lscv_h_frequency_weights_equal_replication(case, d):
    """Weighted linear binning with the copies' pairs left in D(e): the replicated data's binned
    criterion at any h, and their binned LSCV_h."""
    seed, n = case
    X, w = _sample_data(seed, 10 * n, d)
    R = np.repeat(X, w.astype(int), axis=0)
    n_e, d_, _, units, L, pair_sums, binned = _weighted_lscv_sample(X, w, "binned", NUMPY, None, "frequency")
    h = np.array([0.3, 0.6, 1.1])
    weighted = _criterion(pair_sums(L, h), n_e, d_, h, float(np.prod(np.diag(L))))
    replicated = lscv_h_objective(R / units, h, method="binned", grid_size=binned.sizes)
    assert _relative(weighted, replicated) <= 1e-10
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LSCVWarning)
        warnings.simplefilter("ignore", UserWarning)  # repeated rows
        a = bw.lscv_h_factor(X, weights=w, weight_kind="frequency", method="binned")
        b = bw.lscv_h_factor(R, method="binned")
    assert _relative(a, b) <= 1e-10


def test_binned_weighted_lscv_h_is_near_the_exact_one_and_scale_free():
    rng = np.random.default_rng(21)
    X = np.r_[rng.normal(size=(600, 2)), rng.normal(3.0, 0.6, size=(400, 2))]
    w = rng.uniform(0.2, 3.0, size=len(X))
    exact = bw.lscv_h(X, weights=w, method="exact", backend="numpy")
    binned = bw.lscv_h(X, weights=w, method="binned", tolerance=1e-5)
    assert _relative(binned, exact) <= 1e-3
    assert _relative(bw.lscv_h(X, weights=40 * w, method="binned"), bw.lscv_h(X, weights=w, method="binned")) <= 1e-10
    assert bw.selection("lscv_h", X, weights=w, method="binned").method == "binned"


@pytest.mark.parametrize("d", [1, 2])
def test_binned_kde_frequency_weights_equal_replication(d):
    """Linear binning with weights gives the replicated data's counts on the same grid: the binned
    density (and KDE's binned pdf) equals theirs to rounding."""
    from parzen.binned import density_on_grid

    X, w = _sample_data(14, 300, d)
    R = np.repeat(X, w.astype(int), axis=0)
    H = np.cov(X, rowvar=False).reshape(d, d) * 0.2
    Q = np.mean(X, axis=0) + np.linspace(-2.0, 2.0, 9)[:, None] * np.std(X, axis=0)
    weighted, replicated = density_on_grid(X, H, weights=w), density_on_grid(R, H)
    assert weighted.spec == replicated.spec
    assert _relative(weighted(Q), replicated(Q)) <= 1e-10
    a = KDE(method="binned", weight_kind="frequency").fit(X, weights=w)
    b = KDE(method="binned").fit(R)
    assert a.grid_size_ == b.grid_size_
    assert _relative(a.pdf(Q), b.pdf(Q)) <= 1e-10


@pytest.mark.parametrize("d", [1, 2, 3])
def test_probability_weighted_scott_and_normal_scale_are_scipys(d):
    """SciPy's gaussian_kde with weights: covariance factor^2 times np.cov(aweights=w), the factor
    neff^(-1/(d+4)) ("scott") or (neff (d + 2) / 4)^(-1/(d+4)) ("silverman"), neff Kish's."""
    from scipy.stats import gaussian_kde

    X, _ = _sample_data(15, 50, d)
    w = np.random.default_rng(15).uniform(0.1, 4.0, size=len(X))
    for method, rule in (("scott", bw.scott), ("silverman", bw.normal_scale)):
        kde = gaussian_kde(X.T, bw_method=method, weights=w)
        got = rule(X if d > 1 else X[:, 0], weights=w)
        assert _relative(np.atleast_2d(got ** 2 if d == 1 else got), kde.covariance) <= 1e-12


@pytest.mark.parametrize(("weights", "message"), [
    (lambda n: np.r_[-1.0, np.ones(n - 1)], r"finite and non-negative, got -1 for row 0; give such rows weight 0"),
    (lambda n: np.r_[np.ones(n - 1), np.nan], r"finite and non-negative, got nan for row 29"),
    (lambda n: np.ones(n - 2), r"weights must be 30 numbers, one per row of the data; got shape \(28,\)"),
    (lambda n: np.zeros(n), r"weights sum to zero; at least one row needs a positive weight"),
])
@pytest.mark.parametrize("name", ["scott", "plugin", "lscv_h"])
def test_bad_weights_name_the_row_and_the_fix(weights, message, name):
    X, _ = _sample_data(16, 30, 1)
    with pytest.raises(ValueError, match=message):
        bw.select(name, X, weights=weights(30), backend="numpy")
    with pytest.raises(ValueError, match=message):
        KDE(bandwidth=name, backend="numpy").fit(X, weights=weights(30))


@pytest.mark.parametrize("name", ["lscv_H", "lscv_diag"])
def test_binned_weighted_lscv_matrices(name):
    """Binned with the weights: equal weights give the unweighted binned H; probability weights an
    H near the exact weighted one; scale-free."""
    selector = getattr(bw, name)
    rng = np.random.default_rng(17)
    X = np.r_[rng.normal(size=(300, 2)), rng.normal(2.5, 0.5, size=(200, 2))] @ np.array([[1.0, 0.5], [0.0, 0.8]])
    plain = selector(X, method="binned")
    assert _relative(selector(X, weights=np.full(len(X), 2.0), method="binned"), plain) <= 1e-8
    w = rng.uniform(0.2, 2.0, size=len(X))
    binned = selector(X, weights=w, method="binned", tolerance=1e-5)
    exact = selector(X, weights=w, method="exact", backend="numpy")
    assert _relative(binned, exact) <= 1e-3  # measured 6e-5 (lscv_H) and 1.1e-4 (lscv_diag)
    assert _relative(selector(X, weights=7 * w, method="binned"), selector(X, weights=w, method="binned")) <= 1e-8


@pytest.mark.parametrize("name", ["lscv_h", "lscv_H", "lscv_diag", "plugin_H", "plugin_diag", "scv_H", "scott", "normal_scale"])
def test_matrix_selectors_probability_weights_scale_free_and_equal_weights_unweighted(name):
    X, _ = _sample_data(18, 40, 2)
    w = np.random.default_rng(18).uniform(0.2, 3.0, size=len(X))
    options = {} if name in ("scott", "normal_scale") else {"backend": "numpy"}
    selector = getattr(bw, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LSCVWarning)
        base = selector(X, weights=w, **options)
        # 1e-8: the optimisers (Nelder-Mead, BFGS) see the criterion rounded differently
        assert _relative(selector(X, weights=1e3 * w, **options), base) <= 1e-8
        assert _relative(selector(X, weights=np.full(len(X), 0.3), **options), selector(X, **options)) <= 1e-8
