"""Issue 15's silently wrong AQP answers and build/store crashes: staleness by content, stale
answers that warn or refuse, reproducible builds, refresh keeping the requested sample, and
clear errors for all-NULL and non-finite columns and NULL or corrupt payloads."""

from __future__ import annotations

import threading
import warnings

import duckdb
import numpy as np
import pytest

from parzen.aqp import CorruptSynopsis, Engine, OutdatedSynopsis, StaleSynopsisError, StaleSynopsisWarning

COUNT = "SELECT COUNT(*) FROM t WHERE a BETWEEN 10000 AND 20999"


def _table(con, n=20_000):
    """a: 0..n-1 (continuous-ish integers), b: a second column, g: three groups."""
    con.execute(f"CREATE OR REPLACE TABLE t AS SELECT i::DOUBLE AS a, (i % 97)::DOUBLE * 1.5 AS b, "
                f"['x', 'y', 'z'][i % 3 + 1] AS g FROM range({n}) r(i)")


def _exact(con, sql=COUNT):
    return con.execute(sql).fetchone()[0]


@pytest.fixture
def con(tmp_path):
    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    _table(con)
    return con


# --- staleness by content ---------------------------------------------------------------------


def test_update_is_detected_by_list_and_by_a_new_engine(con):
    engine = Engine(con)
    engine.build("t", sample=2000, seed=1)
    assert not engine.list().loc[0, "stale"]
    con.execute("UPDATE t SET a = a + 1000")  # same row count, other values: the old check missed it
    approximate = engine.query(COUNT).iloc[0, 0]  # not checked yet: the open engine cannot know
    assert abs(approximate - _exact(con)) > 0.05 * _exact(con)  # the answer is wrong by ~10 %
    listing = engine.list()
    assert listing.loc[0, "stale"] and listing.loc[0, "why stale"] == "contents changed (same row count)"
    with pytest.warns(StaleSynopsisWarning, match=r"'t' is stale \(contents changed.*engine.refresh\('t'\)"):
        engine.query(COUNT)  # the open engine remembers list()'s verdict
    with pytest.warns(StaleSynopsisWarning, match="contents changed"):
        Engine(con).query(COUNT)  # a new engine checks when it loads the synopsis
    engine.refresh("t")
    with warnings.catch_warnings():
        warnings.simplefilter("error", StaleSynopsisWarning)
        assert engine.query(COUNT).iloc[0, 0] == pytest.approx(_exact(con), rel=0.01)
        assert not engine.list().loc[0, "stale"]


def test_delete_and_insert_keeping_the_row_count_is_detected(con):
    Engine(con).build("t", sample=2000)
    con.execute("DELETE FROM t WHERE a < 100")
    con.execute("INSERT INTO t SELECT a + 50000, b, g FROM t LIMIT 100")
    assert _exact(con, "SELECT COUNT(*) FROM t") == 20_000
    assert Engine(con).check("t") == "contents changed (same row count)"


def test_why_stale_names_rows_changed_dropped_tables_and_columns(con):
    con.execute("CREATE TABLE u AS SELECT * FROM t")
    con.execute("CREATE TABLE v AS SELECT * FROM t")
    engine = Engine(con)
    for table in "tuv":
        engine.build(table, sample=500, group_by=["g"], grid=0)
    con.execute("INSERT INTO t SELECT * FROM t LIMIT 10")
    con.execute("DROP TABLE u")
    con.execute("ALTER TABLE v DROP COLUMN b")
    listing = Engine(con).list().set_index("table")
    assert listing.loc["t", "why stale"] == "10 rows appended (20000 at build, 20010 now)"  # refresh adds them
    assert listing.loc["t", "rows now"] == 20_010
    con.execute("DELETE FROM t WHERE a BETWEEN 100 AND 104")
    assert Engine(con).check("t") == "rows changed: 20000 at build, 20005 now"  # deleted: refresh rebuilds
    assert listing.loc["u", "why stale"] == "table dropped"
    assert listing.loc["v", "why stale"].startswith("columns changed")
    assert listing["stale"].all()


def test_a_change_outside_the_synopsis_columns_keeps_it_fresh(con):
    con.execute("ALTER TABLE t ADD COLUMN note VARCHAR")
    engine = Engine(con)
    engine.build("t", columns=["a"], sample=500)
    con.execute("UPDATE t SET b = b + 1")  # neither modelled nor categorical
    assert engine.check("t") == ""
    con.execute("UPDATE t SET note = 'x'")  # a categorical column (GROUP BY note is answered): stale
    assert engine.check("t") == "contents changed (same row count)"
    engine.build("t", columns=["a"], sample=500)
    con.execute("UPDATE t SET a = a + 1 WHERE a = 7")  # one value of a modelled column
    assert engine.check("t") == "contents changed (same row count)"


def test_fingerprint_is_order_independent_and_mergeable(con):
    from parzen.aqp.build import content_fingerprint

    built = Engine(con).build("t", sample=500, grid=0)
    columns = ["a", "b", "g"]  # modelled, then categorical (g: GROUP BY g is answered)
    assert content_fingerprint(con, "t", columns) == (built.row_count, built.fingerprint)
    con.execute("CREATE TABLE shuffled AS SELECT * FROM t ORDER BY hash(a, 7)")
    assert content_fingerprint(con, "shuffled", columns) == (built.row_count, built.fingerprint)
    con.execute("CREATE TABLE low AS SELECT * FROM t WHERE a < 5000")
    con.execute("CREATE TABLE high AS SELECT * FROM t WHERE a >= 5000")
    parts = [content_fingerprint(con, name, columns) for name in ("low", "high")]
    assert (sum(r for r, _ in parts), sum(h for _, h in parts)) == (built.row_count, built.fingerprint)


# --- stale answers warn or refuse -------------------------------------------------------------


@pytest.mark.parametrize("found_by", ["list", "check"])
def test_an_open_engine_warns_or_refuses_after_a_check_found_it_stale(con, found_by):
    warn, refuse = Engine(con), Engine(con, on_stale="error")
    warn.build("t", sample=2000, group_by=["g"], grid=256, regression=[("b", "a")])
    for engine in (warn, refuse):
        engine.query(COUNT)  # loaded and fresh
    con.execute("UPDATE t SET b = b + 1 WHERE a < 10")
    queries = [COUNT, "SELECT g, SUM(b) FROM t WHERE a > 100 GROUP BY g", "SELECT SUM(b) FROM t",
               ("SELECT AVG(b) FROM t WHERE a BETWEEN 10 AND 5000", "regression")]
    for engine in (warn, refuse):
        with warnings.catch_warnings():
            warnings.simplefilter("error", StaleSynopsisWarning)
            engine.query(COUNT)  # no check since the UPDATE: answered without a word (documented)
        if found_by == "list":
            assert engine.list().loc[0, "why stale"] == "contents changed (same row count)"
        else:
            assert engine.check("t") == "contents changed (same row count)"
    for sql in queries:
        sql, method = sql if isinstance(sql, tuple) else (sql, "density")
        for _ in range(2):  # every later answer, not only the first
            with pytest.warns(StaleSynopsisWarning, match=r"engine.refresh\('t'\)"):
                warn.query(sql, method=method)
            with pytest.raises(StaleSynopsisError, match=r"synopsis of 't' is stale .*engine.refresh\('t'\)"):
                refuse.query(sql, method=method)
    with pytest.raises(StaleSynopsisError):
        refuse.compare(COUNT)
    assert isinstance(StaleSynopsisError("x"), ValueError)
    refuse.refresh("t")
    assert refuse.query(COUNT).iloc[0, 0] == pytest.approx(_exact(con), rel=0.02)


def test_a_check_that_finds_it_fresh_again_lifts_the_verdict(con):
    engine = Engine(con, on_stale="error")
    engine.build("t", sample=500)
    con.execute("UPDATE t SET a = a + 1")
    assert engine.check("t")
    with pytest.raises(StaleSynopsisError):
        engine.query(COUNT)
    con.execute("UPDATE t SET a = a - 1")  # the same contents as at build
    assert engine.check("t") == ""
    engine.query(COUNT)


def test_on_stale_must_be_warn_or_error():
    with pytest.raises(ValueError, match="on_stale must be 'warn' or 'error', got 'ignore'"):
        Engine(":memory:", on_stale="ignore")


# --- reproducible builds and refresh ----------------------------------------------------------


def _same_synopsis(first, second) -> bool:
    """Equal bytes apart from the timings (when built, seconds to build and to fit each regression)."""
    second.built_at, second.build_seconds = first.built_at, first.build_seconds
    for pair, regression in second.regressions.items():
        regression.seconds = first.regressions[pair].seconds
    return first.to_bytes() == second.to_bytes()


@pytest.mark.parametrize("group_by", [None, ["g", "m"]])
def test_builds_with_one_seed_are_equal_and_other_seeds_differ(con, group_by):
    con.execute("ALTER TABLE t ADD COLUMN m INTEGER")
    con.execute("UPDATE t SET m = CAST(b AS INTEGER)")  # with g: 291 groups, whose rows came in any order
    engine = Engine(con)
    options = {"sample": 3000, "group_by": group_by, "grid": 128,
               "regression": None if group_by else [("b", "a")]}  # (fitted on all 20 000 rows when grouped: slow)
    first = engine.build("t", seed=5, **options)
    for _ in range(3):
        again = engine.build("t", seed=5, **options)
        assert again.models == first.models and _same_synopsis(first, again)
    other = engine.build("t", seed=6, **options)
    assert not np.array_equal(other.sample["a"], first.sample["a"])
    # PLUGIN's functionals come from every row of the table, not from the sample: the same
    # bandwidth for another sample of as many values
    assert other.sample_size == first.sample_size
    assert other.models["a"].bandwidth == pytest.approx(first.models["a"].bandwidth, rel=1e-12)
    assert other.models["a"].bandwidth_from.startswith("plugin, every row: Psi_6, Psi_4 of 20000 rows")


def test_refresh_keeps_the_requested_sample_and_options(con):
    engine = Engine(con)
    # 5 groups of very different sizes: the small ones are topped up to 1000 rows each
    con.execute("CREATE TABLE s AS SELECT i::DOUBLE AS a, (i % 89)::DOUBLE AS b, "
                "CASE WHEN i % 100 < 96 THEN 'big' ELSE 'small' || (i % 100 - 96) END AS g FROM range(50000) r(i)")
    built = engine.build("s", sample=5000, group_by=["g"], bandwidth="scott", seed=3, grid=64)
    assert built.sample_size > 5000  # drawn: the requested 5000 plus the top-ups
    stored = Engine(con).synopsis("s")
    assert _same_synopsis(stored, Engine(con).refresh("s"))  # unchanged data: the stored synopsis, as it is
    sizes = []
    for _ in range(3):
        refreshed = Engine(con).refresh("s", full=True)
        sizes.append(refreshed.sample_size)
        assert refreshed.requested_sample == 5000 and refreshed.bandwidth == "scott" and refreshed.seed == 3
        refreshed.refreshed = ""
        assert _same_synopsis(built, refreshed)  # rebuilt from unchanged data: the same synopsis
    assert sizes == [built.sample_size] * 3
    engine.build("s", columns=["a"], sample=400, bandwidth={"a": 2.5}, grid=0)
    refreshed = Engine(con).refresh("s", full=True)
    assert refreshed.models["a"].bandwidth == 2.5 and list(refreshed.models) == ["a"]
    assert refreshed.requested_sample == refreshed.sample_size == 400 and refreshed.grid_points == 0


# --- build and store crashes ------------------------------------------------------------------


def test_all_null_numeric_column_is_modelled_as_all_null(con):
    con.execute("ALTER TABLE t ADD COLUMN z DOUBLE")
    con.execute("ALTER TABLE t ADD COLUMN k INTEGER")
    for group_by in (None, ["g"]):
        engine = Engine(con)
        synopsis = engine.build("t", sample=1000, group_by=group_by)
        assert {"z", "k"} <= set(synopsis.models) and "z" not in synopsis.grids
        answer = engine.query("SELECT COUNT(z), AVG(z), COUNT(*) FROM t").iloc[0]
        assert answer["count(z)"] == 0 and np.isnan(answer["avg(z)"]) and answer["count_star()"] == 20_000
        assert engine.query("SELECT COUNT(*) FROM t WHERE z > 1").iloc[0, 0] == 0
        assert engine.query("SELECT COUNT(k) FROM t WHERE a > 100 AND k < 5").iloc[0, 0] == 0
        assert engine.query("SELECT COUNT(z) FROM t WHERE a < 5000").iloc[0, 0] == 0


@pytest.mark.parametrize("value", ["inf", "-inf", "nan"])
def test_non_finite_values_are_refused_naming_the_column(con, value):
    con.execute(f"UPDATE t SET b = '{value}'::DOUBLE WHERE a = 1234")
    for group_by in (None, ["g"]):
        with pytest.raises(ValueError, match=r"column 'b' of table 't' holds 1 non-finite value\(s\).*"
                                             r"columns=\[\.\.\.\] without 'b'.*"
                                             r"""UPDATE "t" SET "b" = NULL WHERE NOT isfinite\("b"\)"""):
            Engine(con).build("t", sample=500, group_by=group_by)
    Engine(con).build("t", columns=["a"], sample=500)  # the first way round: leave it out
    con.execute('UPDATE "t" SET "b" = NULL WHERE NOT isfinite("b")')  # the second: clean it
    assert Engine(con).build("t", sample=500).totals["b"][0] == 19_999


def test_a_synopsis_of_an_older_format_is_listed_as_such_and_refused(con, monkeypatch):
    from parzen.aqp import synopsis as synopsis_module

    monkeypatch.setattr(synopsis_module, "FORMAT_VERSION", 8)
    Engine(con).build("t", sample=500, grid=0)
    monkeypatch.undo()
    listing = Engine(con).list().set_index("table")
    assert listing.loc["t", "why stale"] == "older format: rebuild with engine.refresh('t')"
    with pytest.raises(OutdatedSynopsis, match=r"has format 8, this parzen reads 9, 10, 11, 12; rebuild it"):
        Engine(con).query("SELECT COUNT(*) FROM t WHERE a > 3")


def test_null_payload_and_corrupt_synopses_are_listed_and_refused(con):
    con.execute("CREATE TABLE u AS SELECT * FROM t")
    con.execute("CREATE TABLE v AS SELECT * FROM t")
    engine = Engine(con)
    for table in "tuv":
        engine.build(table, sample=500, grid=0)
    con.execute("UPDATE parzen_synopses SET payload = NULL WHERE table_name = 't'")
    con.execute("UPDATE parzen_synopses SET payload = 'garbage'::BLOB WHERE table_name = 'u'")
    listing = Engine(con).list().set_index("table")
    assert listing.loc["t", "why stale"] == "corrupt: rebuild with engine.refresh('t')"
    assert listing.loc["u", "why stale"] == "corrupt: rebuild with engine.refresh('u')"
    assert listing.loc["v", "why stale"] == "" and listing.loc["v", "sample rows"] == 500
    with pytest.raises(CorruptSynopsis, match=r"NULL payload.*engine.refresh\('t'\)"):
        Engine(con).query("SELECT COUNT(*) FROM t WHERE a > 3")
    with pytest.raises(CorruptSynopsis, match=r"corrupt.*engine.refresh\('u'\)"):
        Engine(con).query("SELECT COUNT(*) FROM u WHERE a > 3")
    fixed = Engine(con)
    fixed.refresh("t")
    assert not Engine(con).list().set_index("table").loc["t", "stale"]


def test_a_stored_synopsis_lacking_a_field_is_corrupt_and_refresh_rebuilds_it(con):
    """A format-9 payload written before its last fields were kept (the shared flights.duckdb of an
    earlier build holds one without ``rowid_end``): CorruptSynopsis naming the field, not a KeyError, so
    that refresh rebuilds it."""
    import io
    import json

    from parzen.aqp import store
    from parzen.aqp.synopsis import Synopsis

    engine = Engine(con)
    built = engine.build("t", sample=500, grid=0)
    with np.load(io.BytesIO(built.to_bytes()), allow_pickle=False) as stored:
        arrays = {k: stored[k] for k in stored.files}
    meta = json.loads(arrays.pop("meta").tobytes().decode())
    meta["format_version"] = 9
    del meta["rowid_end"]
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
    with pytest.raises(CorruptSynopsis, match=r"lacks 'rowid_end'.*rebuild it"):
        Synopsis.from_bytes(buffer.getvalue())
    payload = buffer.getvalue()
    con.execute("UPDATE parzen_synopses SET payload = ?, sha256 = ? WHERE table_name = 't'",
                [payload, store.checksum(payload)])
    assert Engine(con).list().set_index("table").loc["t", "stale"]
    assert Engine(con).refresh("t").rowid_end == built.rowid_end


# --- loading -----------------------------------------------------------------------------------


def test_the_compiled_functions_load_beside_the_synopsis_and_a_failure_raises_from_the_load(con, monkeypatch):
    """Engine._loaded warms Numba's functions up in a thread while DuckDB reads the payload; a failure there is
    raised where the caller sees it, by the load's own warm-up, not lost in the thread."""
    Engine(con).build("t", sample=500, grid=0)
    import parzen.aqp.engine as engine_module

    callers = []

    def failing() -> None:
        callers.append(threading.current_thread().name)
        raise RuntimeError("no compiler here")

    monkeypatch.setattr(engine_module, "warm_up", failing)
    with pytest.raises(RuntimeError, match="no compiler here"):
        Engine(con).query(COUNT)
    assert callers == ["parzen-warm-up", threading.main_thread().name]
    monkeypatch.undo()
    assert Engine(con).query(COUNT).iloc[0, 0] == pytest.approx(_exact(con), rel=0.05)
