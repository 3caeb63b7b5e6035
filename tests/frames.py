"""Shared by the AQP tests: an engine's answer frame against DuckDB's exact frame of the same query."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from parzen.aqp import Engine
from parzen.aqp.cube_answers import FORM

#: The ends of the labels of the columns that carry an answer's intervals (``<name> low``, ``<name> high``).
INTERVAL_ENDS = (" low", " high")


def values_of(answer: pd.DataFrame) -> pd.DataFrame:
    """``answer``'s columns without those of its intervals (``<name> low`` / ``<name> high``)."""
    return answer[[c for c in answer.columns if not c.endswith(INTERVAL_ENDS)]]


def sorted_by(exact: pd.DataFrame, groups: Iterable[str]) -> pd.DataFrame:
    """``exact``'s rows sorted (stably) by those of its columns named in ``groups``, in its columns' order, as an
    answer's rows are by its group columns: DuckDB gives its rows in any order."""
    named = set(groups)
    keys = [c for c in exact.columns if c in named]
    return exact.sort_values(keys, kind="stable").reset_index(drop=True) if keys else exact


def assert_equals_exact(answer: pd.DataFrame, exact: pd.DataFrame, groups: Iterable[str] = (), *,
                        rtol: float = 1e-9, intervals: bool = False) -> None:
    """Assert that ``answer`` holds DuckDB's answer ``exact``: the same shape and, column by column in order,
    numbers within ``rtol`` of each other (NaN where NaN), anything else equal.

    Parameters
    ----------
    answer : pandas.DataFrame
        The engine's answer, its rows sorted by its group columns.
    exact : pandas.DataFrame
        DuckDB's answer of the same query (``exact=True``), its rows in any order.
    groups : iterable of str, optional
        Columns to sort ``exact``'s rows by, those it has (:func:`sorted_by`).
    rtol : float, optional
        The relative tolerance of numbers: the round-off of sums added in another order.
    intervals : bool, optional
        ``answer`` has intervals (``with_error=True``): its ``<name> low`` / ``<name> high`` columns are left
        out (:func:`values_of`).
    """
    if intervals:
        answer = values_of(answer)
    exact = sorted_by(exact, groups)
    assert answer.shape == exact.shape, (answer, exact)
    for a, x in zip(answer.columns, exact.columns):
        got, want = answer[a].to_numpy(), exact[x].to_numpy()
        if _numbers(want):
            np.testing.assert_allclose(got.astype(float), want.astype(float), rtol=rtol, equal_nan=True)
        else:
            assert list(got) == list(want), (a, x)


def assert_answered_from_the_tables(engine: Engine, sql: str, groups: Iterable[str] = (), *,
                                    rtol: float = 1e-9) -> pd.DataFrame:
    """Assert that ``engine`` answers ``sql`` from its exact tables, as DuckDB answers it
    (:func:`assert_equals_exact`).

    Parameters
    ----------
    engine : parzen.aqp.Engine
        An engine with exact tables (``cube=``) that answer ``sql``.
    sql : str
        A query without intervals asked of it (``with_error=False``).
    groups : iterable of str, optional
        Columns to sort DuckDB's rows by, those it has (:func:`sorted_by`).
    rtol : float, optional
        The relative tolerance of numbers.

    Returns
    -------
    pandas.DataFrame
        DuckDB's answer, its rows sorted as the engine's.
    """
    answer = engine.query(sql)
    assert answer.attrs["form"] == FORM, sql
    exact = sorted_by(engine.query(sql, exact=True), groups)
    assert_equals_exact(answer, exact, rtol=rtol)
    return exact


def _numbers(values: np.ndarray) -> bool:
    """Whether ``values`` are numbers: of a numeric dtype, or Python numbers in an object array (as DuckDB
    gives some columns with NULLs)."""
    return values.dtype.kind in "fiu" or values.dtype == object and len(values) > 0 and \
        isinstance(values[0], (float, int))
