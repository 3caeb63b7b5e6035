"""Synopsis bandwidths from PLUGIN's functionals of every row (parzen.aqp.bandwidths)."""

from __future__ import annotations

import re

import duckdb
import numpy as np
import pandas as pd
import pytest

from parzen.aqp import Engine, bandwidths
from parzen.aqp.bandwidths import ColumnSpread, column_counts, table_functionals
from parzen.aqp.build import integral_factor
from parzen.bandwidth.plugin import first_pilot, plugin_stages
from parzen.binned.grid import GridSpec, linear_bin
from parzen.binned.plugin import prior_grid_size, stages_from_counts
from parzen.kernels import GAUSS_MU2, GAUSS_RK


def _table(frame: pd.DataFrame) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    con.register("frame", frame)
    con.execute("CREATE TABLE t AS SELECT * FROM frame")
    con.unregister("frame")
    return con


def _h(psi4: float, n: int) -> float:
    """Eq. (19) for n points (paper 000 in docs/statistics.md)."""
    return (GAUSS_RK / (GAUSS_MU2**2 * psi4 * n)) ** 0.2


def _frame(rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    bimodal = np.where(rng.random(rows) < 0.3, rng.normal(-2.0, 0.5, rows), rng.normal(3.0, 1.5, rows))
    lognormal = rng.lognormal(3.0, 0.8, rows)
    lognormal[rng.random(rows) < 0.1] = np.nan  # NULLs: left out of the functionals
    return pd.DataFrame({"x": bimodal, "y": lognormal, "k": rng.integers(0, 5000, rows).astype(np.int64),
                         "m": rng.integers(0, 12, rows).astype(np.int64)})


@pytest.mark.parametrize("group_by", [None, ["m"]])
def test_bandwidth_is_plugin_of_every_row_for_the_sample_size(group_by):
    """h = [R(K) / (mu_2^2 Psi_4 n_s)]^(1/5) x integral_factor(n_s), with Psi_4 binned PLUGIN's
    estimate from all N rows of the column (pilots for N), n_s the sampled values: equal to
    round-off, for a uniform and for a stratified sample."""
    frame = _frame(60_000)
    con = _table(frame)
    synopsis = Engine(con).build("t", sample=4000, group_by=group_by, grid=0)
    for column in ("x", "y", "k"):
        values = frame[column].to_numpy(dtype=np.float64)
        values = values[~np.isnan(values)]
        model = synopsis.models[column]
        n = int(np.count_nonzero(~np.isnan(synopsis.sample[column])))
        said = re.fullmatch(rf"plugin, every row: Psi_6, Psi_4 of {values.size} rows \(binned, (\d+) nodes\), "
                            rf"h for {n} sampled values", model.bandwidth_from)
        assert said, model.bandwidth_from
        stages = plugin_stages(values, method="binned", grid_size=int(said.group(1)))
        assert model.bandwidth == pytest.approx(_h(stages.psi4, n) * integral_factor(n), rel=1e-9)
    if group_by is None:  # 12 values: discrete, as before
        assert (synopsis.models["m"].bandwidth, synopsis.models["m"].bandwidth_from) == (0.0, "point masses")


def test_functionals_are_close_to_exact_plugin_on_a_small_table():
    """On 3000 rows the binned functionals of every row give h within 1e-4 of exact PLUGIN's
    (pairs summed exactly), for any sample size."""
    frame = _frame(3000, seed=1)
    con = _table(frame)
    synopsis = Engine(con).build("t", sample=500, grid=0)
    for column in ("x", "y"):
        values = frame[column].dropna().to_numpy(dtype=np.float64)
        exact = plugin_stages(values, method="exact", backend="numpy")
        n = int(np.count_nonzero(~np.isnan(synopsis.sample[column])))
        assert synopsis.models[column].bandwidth == pytest.approx(_h(exact.psi4, n) * integral_factor(n), rel=1e-4)


def _reader(frame: pd.DataFrame, batch: int, calls: list):
    def read(columns):
        calls.append(tuple(columns))
        for start in range(0, len(frame), batch):
            yield {c: frame[c].to_numpy(dtype=np.float64)[start:start + batch] for c in columns}
    return read


def _binner(frame: pd.DataFrame, batch: int, calls: list):
    """bin_columns for table_functionals: column_counts over the batches of :func:`_reader`."""
    read = _reader(frame, batch, calls)
    return lambda specs: column_counts(read, specs)


def _spread(values: np.ndarray) -> ColumnSpread:
    present = values[~np.isnan(values)]
    return ColumnSpread(present.size, float(present.min()), float(present.max()), float(np.std(present, ddof=1)))


def test_counts_added_over_batches_equal_plugin_on_all_rows_and_units_do_not_overflow():
    """Counts added over record batches give binned PLUGIN's stages on all rows (on the same
    grid), within the tolerance of 1e-4 on h (predicted); a column in
    units of 1e-30 gets the same h in its units (the pair sums are formed on a grid scaled by a
    power of two)."""
    frame = _frame(20_000, seed=2)
    frame["tiny"] = frame["x"] * 1e-30
    calls: list = []
    spreads = {c: _spread(frame[c].to_numpy(dtype=np.float64)) for c in ("x", "y", "tiny")}
    got = table_functionals(_binner(frame, 3001, calls), spreads)
    assert calls == [("x", "y", "tiny")]  # one pass over all columns
    for column in ("x", "y"):
        f = got[column]
        stages = plugin_stages(frame[column].dropna().to_numpy(), method="binned", grid_size=f.grid_size)
        assert f.rows == frame[column].count() and f.predicted_error <= 1e-4
        for name in ("g1", "psi6", "g2", "psi4", "sigma"):
            assert getattr(f, name) == pytest.approx(getattr(stages, name), rel=1e-9), name
        assert f.bandwidth(f.rows) == pytest.approx(stages.h, rel=1e-9)
        assert f.bandwidth(1000) == pytest.approx(_h(stages.psi4, 1000), rel=1e-9)
    assert got["tiny"].bandwidth(1000) == pytest.approx(got["x"].bandwidth(1000) * 1e-30, rel=1e-9)


def test_a_column_whose_first_grid_is_too_coarse_is_binned_again_alone(monkeypatch):
    """Where the predicted binning error on h exceeds the tolerance, that column (only) is read
    again onto a finer grid, and its h is then within the tolerance of exact PLUGIN's.  The first
    grid is made coarser, binned PLUGIN's rule for 20 times the tolerance ((delta / sigma)^2 =
    2 tolerance): still fine for normal data (predicted error 0.32 (delta / sigma)^2 = 0.64
    tolerance), not for uniform data (about 3 (delta / sigma)^2 at n = 4000, its edges)."""
    monkeypatch.setattr(bandwidths, "first_grid_size",
                        lambda spread, tolerance: prior_grid_size(spread.high - spread.low, spread.sigma, 20 * tolerance))
    rng = np.random.default_rng(4)
    rows = 4000
    frame = pd.DataFrame({"normal": rng.normal(0.0, 1.0, rows), "uniform": rng.uniform(0.0, 1.0, rows)})
    calls: list = []
    spreads = {c: _spread(frame[c].to_numpy()) for c in frame}
    got = table_functionals(_binner(frame, 1000, calls), spreads)
    assert calls[0] == ("normal", "uniform") and len(calls) > 1 and set(calls[1:]) == {("uniform",)}
    for column in frame:
        exact = plugin_stages(frame[column].to_numpy(), method="exact", backend="numpy")
        assert got[column].bandwidth(rows) == pytest.approx(exact.h, rel=1e-4)
        assert got[column].predicted_error <= 1e-4


def test_describe_says_how_bandwidths_were_chosen():
    con = _table(_frame(5000, seed=3))
    engine = Engine(con)
    engine.build("t", sample=1000, bandwidth={"y": 2.5}, grid=0)
    described = engine.describe("t").set_index("column")
    assert list(described.index) == ["x", "y", "k", "m"]
    assert described.loc["x", "bandwidth from"].startswith("plugin, every row: Psi_6, Psi_4 of 5000 rows (binned, ")
    assert described.loc["k", "kind"] == "integer" and described.loc["k", "reflected at"] == -0.5
    assert (described.loc["y", "bandwidth"], described.loc["y", "bandwidth from"]) == (2.5, "given")
    assert (described.loc["m", "kind"], described.loc["m", "bandwidth"], described.loc["m", "bandwidth from"]) == (
        "discrete", 0.0, "point masses")
    built = engine.build("t", sample=1000, bandwidth="scott", grid=0)
    present = int(np.count_nonzero(~np.isnan(built.sample["y"])))  # y's NULLs are not sampled values
    assert engine.describe("t").set_index("column").loc["y", "bandwidth from"] == \
        f"scott, sampled values: {present} of {present}"
    with pytest.raises(ValueError, match="no synopsis"):
        engine.describe("other")


def test_the_first_grid_grows_with_the_rows_so_one_pass_suffices():
    """first_grid_size shrinks the spacing as the pilots shrink with N: 400 000 uniform values
    (edges: the largest binning error of the common shapes) are read once, where binned PLUGIN's
    unscaled first grid predicts more than the tolerance and would be read again."""
    rows = 400_000
    frame = pd.DataFrame({"u": np.random.default_rng(5).uniform(0.0, 1.0, rows)})
    spread = _spread(frame["u"].to_numpy())
    calls: list = []
    got = table_functionals(_binner(frame, 100_000, calls), {"u": spread})["u"]
    assert calls == [("u",)] and got.predicted_error <= 1e-4
    coarse = prior_grid_size(spread.high - spread.low, spread.sigma, 1e-4)
    assert got.grid_size == bandwidths.first_grid_size(spread, 1e-4) > coarse
    unscaled = stages_from_counts(linear_bin(frame["u"].to_numpy(), GridSpec.covering(spread.low, spread.high, coarse)),
                                  first_pilot(spread.sigma, rows))
    assert unscaled.predicted_error > 1e-4


@pytest.mark.parametrize("selector", ["scott", "lscv_h"])
def test_selectors_on_a_stratified_sample_take_its_weights(selector):
    """Issue 20, item 2: on a stratified sample whose strata are sampled at different rates, a selector
    other than PLUGIN runs on the sampled values with their weights rows_g / drawn_g as probability
    weights (Kish's n_e for n), which changes h; an unstratified sample's selection is unweighted, as before."""
    from parzen import bandwidth as bw

    rng = np.random.default_rng(7)
    big, small = 40_000, 1_500  # the small group is sampled whole (MIN_GROUP_SAMPLE), the big one at ~5 %
    frame = pd.DataFrame({"g": ["big"] * big + ["small"] * small,
                          "x": np.concatenate([rng.normal(10.0, 3.0, big), rng.normal(0.0, 0.3, small)])})
    engine = Engine(_table(frame))
    built = engine.build("t", sample=2000, bandwidth=selector, grid=0, group_by=["g"])
    _, weight, _ = built.strata()
    assert np.ptp(weight) > 10.0  # the strata were sampled at different rates
    x = built.sample["x"]
    n_e = weight.sum() ** 2 / np.dot(weight, weight)
    expected = bw.select(selector, x, weights=weight, weight_kind="probability") * integral_factor(n_e)
    unweighted = bw.select(selector, x) * integral_factor(x.size)
    model = built.models["x"]
    assert model.bandwidth == pytest.approx(expected, rel=1e-12)
    assert abs(model.bandwidth / unweighted - 1.0) > 0.2  # the weights moved h
    assert model.bandwidth_from == f"{selector}, sampled values: {x.size} of {x.size}, weighted by strata"

    plain = engine.build("t", sample=2000, bandwidth=selector, grid=0)  # uniform: unweighted, unchanged
    x = plain.sample["x"]
    assert plain.models["x"].bandwidth == pytest.approx(bw.select(selector, x) * integral_factor(x.size), rel=1e-12)
    assert plain.models["x"].bandwidth_from == f"{selector}, sampled values: {x.size} of {x.size}"


def test_sample_weights_are_none_when_every_stratum_is_sampled_alike():
    from parzen.aqp.build import sample_weights
    from parzen.aqp.synopsis import Group

    alike = [Group(("a",), 100, {}, 0, 10), Group(("b",), 50, {}, 10, 15)]
    assert sample_weights(alike, 15) is None and sample_weights([], 15) is None
    unequal = [Group(("a",), 100, {}, 0, 10), Group(("b",), 10, {}, 10, 20)]
    assert sample_weights(unequal, 20).tolist() == [10.0] * 10 + [1.0] * 10
