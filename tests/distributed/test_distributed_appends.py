"""Engine.refresh of a synopsis built from Parquet files after files are added (parzen.aqp.appends): the
added files alone are read, the exact parts equal a rebuild's, the strata keep their quotas; a file
removed or rewritten rebuilds, saying why."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")

from parzen.aqp import Engine, SynopsisRebuiltWarning
from parzen.aqp import appends as appends_module


def _frame(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": rng.gamma(2.0, 3.0, rows) + seed, "k": rng.integers(0, 300, rows),
                         "g": rng.choice(["a", "b", "c"], rows, p=[0.7, 0.25, 0.05])})


def test_added_parquet_files_are_read_alone_and_merge_as_a_rebuild(threads, tmp_path, monkeypatch):
    folder = tmp_path / "t"
    folder.mkdir()
    for k in range(3):
        _frame(6_000, seed=k).to_parquet(folder / f"part-{k}.parquet")
    engine = Engine(":memory:")
    engine.build("t", source=str(folder / "*.parquet"), client=threads, group_by=["g"], sample=1_500, grid=256)
    _frame(400, seed=9).to_parquet(folder / "part-9.parquet")  # x from 9: beyond most of the old range
    read = []
    real = appends_module.parquet_batches

    def spy(synopsis, files):
        read.extend(files)
        yield from real(synopsis, files)

    monkeypatch.setattr(appends_module, "parquet_batches", spy)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SynopsisRebuiltWarning)
        refreshed = engine.refresh("t", client=threads)
    assert read == [str(folder / "part-9.parquet")]
    assert refreshed.refreshed.startswith("400 appended rows added") and engine.check("t") == ""
    assert refreshed.source["files"][-1] == str(folder / "part-9.parquet")
    rebuilt = engine.refresh("t", full=True, client=threads)
    assert refreshed.row_count == rebuilt.row_count == 18_400
    for c, (count, total) in rebuilt.totals.items():
        assert refreshed.totals[c][0] == count and refreshed.totals[c][1] == pytest.approx(total, rel=1e-12)
    assert [(g.key, g.rows, g.totals["k"][0]) for g in refreshed.groups] == \
        [(g.key, g.rows, g.totals["k"][0]) for g in rebuilt.groups]
    for g in refreshed.groups:  # each stratum: its quota (the keys below its old largest supply it)
        quota = max(int(np.ceil(1_500 * g.rows / 18_400)), min(g.rows, 1_000))
        assert quota - 5 <= g.stop - g.start <= quota
    all_rows = pd.concat([pd.read_parquet(p) for p in sorted(folder.glob("*.parquet"))])
    for c, grid in refreshed.grids.items():
        values = all_rows[c].to_numpy(dtype=float)
        for k in range(0, grid.points.size, 11):
            assert grid.count[k] == np.count_nonzero(values <= grid.points[k])
    frame = _frame(100, seed=1)
    frame.to_parquet(folder / "part-1.parquet")  # rewritten
    stamp = os.stat(folder / "part-1.parquet")
    os.utime(folder / "part-1.parquet", ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 10**9))
    with pytest.warns(SynopsisRebuiltWarning, match="file changed: .*part-1.parquet"):
        again = engine.refresh("t", client=threads)
    assert again.row_count == 12_500 and again.refreshed.startswith("rebuilt: file changed")


def test_an_added_file_without_rows_is_recorded(threads, tmp_path):
    folder = tmp_path / "t"
    folder.mkdir()
    _frame(3_000, seed=0).to_parquet(folder / "part-0.parquet")
    engine = Engine(":memory:")
    built = engine.build("t", source=str(folder / "*.parquet"), client=threads, sample=500, grid=0)
    _frame(10, seed=1).head(0).to_parquet(folder / "part-1.parquet")
    assert engine.check("t") == "files changed: 1 added, 0 removed"
    with warnings.catch_warnings():
        warnings.simplefilter("error", SynopsisRebuiltWarning)
        refreshed = engine.refresh("t", client=threads)
    assert refreshed is not built and refreshed.row_count == 3_000 and len(refreshed.source["files"]) == 2
    assert Engine(engine.con).check("t") == ""  # stored with the new file list


def _cells(synopsis):
    """Each exact aggregate table as {columns: {decoded cell: (rows, sums)}}."""
    values = synopsis.cube.values_with(synopsis.categories.values)
    return {t.columns: {tuple(values[c][k] for c, k in zip(t.columns, codes)): (n, s)
                        for codes, n, s in zip(t.codes.tolist(), t.rows.tolist(), t.sums.tolist())}
            for t in synopsis.cube.tables}


def test_a_parquet_synopsis_keeps_its_exact_tables_on_refresh_equal_to_a_rebuilds(threads, tmp_path):
    """cube_bytes= on a build from Parquet files: the group_by columns' categorical and exact aggregate
    tables (k, an integer of few values, a numeric dimension); a file added with a new group value and
    a new k is added into them (parzen.aqp.parquet_tables), equal to a rebuild's, and the tables
    answer as DuckDB over the files does."""
    folder = tmp_path / "t"
    folder.mkdir()
    for k in range(3):
        frame = _frame(4_000, seed=k).assign(k=lambda f: f["k"] % 20, h=lambda f: np.where(f["x"] > 8, "hi", "lo"))
        frame.to_parquet(folder / f"part-{k}.parquet")
    engine = Engine(":memory:")
    built = engine.build("t", source=str(folder / "*.parquet"), client=threads, group_by=["g", "h"], sample=1_500,
                         grid=256, columns=["x", "k"], cube_bytes=10**6)
    assert built.categories is not None and built.cube is not None and "k" in built.cube.dimensions
    added = _frame(300, seed=9).assign(k=lambda f: f["k"] % 21, h="lo")
    added.loc[:9, "g"] = "d"  # a new value of a group column
    added.to_parquet(folder / "part-9.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("error", SynopsisRebuiltWarning)
        refreshed = engine.refresh("t", client=threads)
    assert refreshed.refreshed.startswith("300 appended rows added")
    assert "d" in refreshed.categories.values["g"] and refreshed.cube is not None
    rebuilt = engine.refresh("t", full=True, client=threads)
    assert refreshed.categories.values == rebuilt.categories.values
    for mine, theirs in zip(refreshed.categories.tables, rebuilt.categories.tables):
        assert mine.columns == theirs.columns and np.array_equal(mine.codes, theirs.codes)
        assert np.array_equal(mine.rows, theirs.rows)
    ours, full = _cells(refreshed), _cells(rebuilt)
    assert set(ours) == set(full) and any("k" in columns for columns in full)
    for columns, cells in full.items():
        assert set(ours[columns]) == set(cells), columns
        for key, (rows, sums) in cells.items():
            assert ours[columns][key][0] == rows
            np.testing.assert_allclose(ours[columns][key][1], sums, rtol=1e-12)
    sql = "SELECT g, COUNT(*) AS n, SUM(x) AS s FROM t WHERE h = 'lo' AND k <= 4 GROUP BY g"
    engine = Engine(engine.con)
    engine._keep(refreshed)
    approx = engine.query(sql)
    exact = engine.query(sql, exact=True).sort_values("g").reset_index(drop=True)
    assert approx.attrs["form"] == "exact table" and list(approx["g"]) == list(exact["g"])
    np.testing.assert_array_equal(approx["n"].to_numpy(float), exact["n"].to_numpy(float))
    np.testing.assert_allclose(approx["s"].to_numpy(float), exact["s"].to_numpy(float), rtol=1e-12)
