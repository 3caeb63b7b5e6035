"""parzen.aqp.column_frames: the answers made on pandas' private fast path equal those of the public path.

A pandas that drops or changes ``DataFrame._from_arrays`` / ``_get_column_array`` makes the module take
the public constructor; every answer must then be the same frame (values, dtypes, column labels, index).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from test_aqp_cubes import FROM, VIEWS, _engine

from parzen.aqp import column_frames
from parzen.aqp.cube_answers import FORM

QUERIES = [
    f"SELECT d_year, c_nation, SUM(lo_revenue), COUNT(*) {FROM} AND p_category = 'K1' GROUP BY d_year, c_nation",
    (f"SELECT c_region, SUM(CASE WHEN p_category IN ('K1', 'K2') THEN lo_revenue ELSE 0 END) AS some, "
     f"SUM(lo_revenue) AS every_one {FROM} GROUP BY c_region"),
    f"SELECT 100.0 * SUM(CASE WHEN c_region = 'R1' THEN lo_revenue ELSE 0 END) / SUM(lo_revenue) AS share {FROM}",
]


@pytest.fixture(scope="module")
def engine():
    return _engine(cube=VIEWS)


def test_the_private_path_is_taken_where_it_holds_and_agrees_with_the_public_one():
    assert column_frames._PRIVATE_FAST_PATH == column_frames._private_fast_path_holds()
    arrays = [np.array([1.5, np.nan]), pd.Series(["a", None]).array]  # texts as the exact tables hold them
    columns = pd.Index(["x", "g"], dtype="str")
    frame = column_frames._public_frame_of(arrays, columns, pd.RangeIndex(2))
    assert frame.columns is columns
    assert list(frame.dtypes) == [np.dtype(np.float64), pd.Series(arrays[1]).dtype]
    assert isinstance(column_frames._public_column_array(frame, 0), np.ndarray)
    assert column_frames._public_column_array(frame, 1) is not None


@pytest.mark.parametrize("sql", QUERIES)
@pytest.mark.parametrize("options", [{"with_error": True}, {}, {"max_rel_error": 0.05}])
def test_answers_on_the_public_path_equal_those_on_the_private_one(engine, monkeypatch, sql, options):
    if not column_frames._PRIVATE_FAST_PATH:
        pytest.skip("this pandas has no private fast path: every answer takes the public one")
    fast = engine.query(sql, **options)
    assert fast.attrs["form"] == FORM  # the exact tables' answers, which the module makes
    monkeypatch.setattr(column_frames, "_PRIVATE_FAST_PATH", False)
    public = engine.query(sql, **options)
    pd.testing.assert_frame_equal(public, fast, check_exact=True)
    assert list(public.columns) == list(fast.columns)
    assert public.columns.dtype == fast.columns.dtype
