"""A chart's bars and density curve from one pass (histogram.answer_with_density) equal answer() and
density() run one after the other, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from serve_support import make_database

from parzen.aqp import Engine, histogram


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    engine = Engine(make_database(tmp_path_factory.mktemp("histogram_density") / "t.duckdb", 12_000), read_only=True)
    yield engine
    engine.con.close()


@pytest.mark.parametrize("where", ["", " WHERE y BETWEEN -1 AND 0.7", " WHERE y > 0 AND k < 30",
                                   " WHERE g IN ('a', 'c') AND y < 1", " WHERE x BETWEEN 4 AND 40"])
@pytest.mark.parametrize("column, width", [("x", 2.5), ("k", 2.0)])
def test_one_pass_equals_answer_then_density(engine, monkeypatch, where, column, width):
    def parsed(w: float) -> histogram.HistogramQuery:
        sql = f"SELECT FLOOR({column} / {w!r}) * {w!r} AS bin, COUNT(*) AS n FROM t{where} GROUP BY bin"
        return engine._resolved_histogram(histogram.parse_histogram(sql))

    bars, fine = parsed(width), parsed(width / 2)
    synopsis = engine.synopsis("t")
    layout = engine._layouts["t"]
    gridded = not where or where == " WHERE x BETWEEN 4 AND 40" and column == "x"  # the grid answers both
    with monkeypatch.context() as patched:
        if not gridded:  # the sample answers both: in one pass, without density()'s own
            patched.setattr(histogram, "density", lambda *args: pytest.fail("a second pass"))
        frame, form, labels, masses = histogram.answer_with_density(bars, fine, synopsis, layout)
    alone, alone_form = histogram.answer(bars, synopsis, layout, None)
    alone_labels, alone_masses = histogram.density(fine, synopsis, layout)
    assert form == alone_form and list(frame.columns) == list(alone.columns)
    np.testing.assert_array_equal(frame.to_numpy(), alone.to_numpy())
    np.testing.assert_array_equal(labels, alone_labels)
    np.testing.assert_array_equal(masses, alone_masses)
    assert masses.sum() > 0
