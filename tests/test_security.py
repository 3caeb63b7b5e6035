"""The exact path (``Engine.query(sql, exact=True)``, ``parzen aqp query --exact``) reads the database's
own tables and nothing else: no file, no table function, no setting, no write, by any syntax.

Two layers, each tested on its own: the parse layer (:func:`parzen.aqp.sql.read_only_sql` and the
table check of ``Engine._exact``) and DuckDB's own controls (``Engine._run`` given hostile text:
external access disabled, configuration locked, a read-only transaction, one SELECT).  Every attack
runs next to files holding :data:`SECRET`, which must never come back.  Add new attacks to
:data:`ATTACKS`.
"""

from __future__ import annotations

import os
import re

import duckdb
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from parzen import cli
from parzen.aqp import Engine, UnsupportedQuery
from parzen.aqp.sql import read_only_sql

SECRET = "SECRET_MARKER_7f3a"

#: Queries that must be refused by ``exact=True`` (and, being outside the AQP subset, by the
#: approximate path).  They run with the working directory holding s.csv and secret.parquet (both
#: with :data:`SECRET`), a table t(a, b), a view v over read_csv('s.csv'), a macro m() reading it
#: and a sequence seq.
ATTACKS = [
    # table functions that read files, anywhere a row source can stand
    "SELECT * FROM t, LATERAL read_text('/etc/passwd')",
    "SELECT * FROM t, LATERAL read_text('s.csv')",
    "SELECT * FROM read_text('s.csv')",
    "SELECT * FROM read_blob('s.csv')",
    "SELECT * FROM read_csv('s.csv')",
    "SELECT * FROM read_csv(['s.csv'])",
    "SELECT * FROM read_csv_auto('s.csv')",
    "SELECT * FROM sniff_csv('s.csv')",
    "SELECT * FROM read_parquet('secret.parquet')",
    "SELECT * FROM parquet_scan('secret.parquet')",
    "SELECT * FROM t JOIN read_csv('s.csv') ON true",
    "SELECT * FROM t POSITIONAL JOIN read_csv('s.csv')",
    "SELECT * FROM t JOIN LATERAL read_text('s.csv') ON true",
    "SELECT * FROM t, LATERAL (SELECT * FROM read_text('s.csv'))",
    "SELECT * FROM t UNION ALL SELECT * FROM read_csv('s.csv')",
    "SELECT (SELECT content FROM read_text('s.csv'))",
    "SELECT * FROM t WHERE a = (FROM read_text('s.csv') SELECT length(content))",
    "SELECT * FROM t WHERE a IN (SELECT 1 FROM read_parquet('secret.parquet'))",
    "WITH c AS (SELECT * FROM read_csv('s.csv')) SELECT * FROM c",
    "SELECT * FROM (SELECT * FROM (SELECT * FROM read_text('s.csv')))",
    "SELECT unnest((SELECT list(z) FROM read_csv('s.csv')))",
    "SELECT * FROM t, unnest((SELECT list(z) FROM read_csv('s.csv')))",
    "SELECT * FROM glob('*')",
    "SELECT * FROM query('SELECT * FROM read_text(''s.csv'')')",
    "SELECT * FROM query_table('s.csv')",
    "SELECT * FROM query_table(['s.csv'])",
    # settings, secrets, variables, the environment
    "SELECT * FROM duckdb_settings()",
    "SELECT * FROM duckdb_secrets()",
    "SELECT * FROM which_secret('s3://bucket/x', 's3')",
    "SELECT * FROM pg_settings",
    "SELECT current_setting('enable_external_access')",
    "SELECT getvariable('x')",
    "SELECT getenv('HOME')",
    # file names as tables (DuckDB's replacement scans read them)
    "SELECT * FROM 's.csv'",
    "FROM 's.csv'",
    'SELECT * FROM "s.csv"',
    'SELECT * FROM main."s.csv"',
    "SELECT * FROM (FROM 's.csv')",
    "SELECT * FROM t WHERE a IN (FROM 's.csv')",
    'SELECT * FROM "s.csv" AS t',
    # CTE names only hide a file name in their own scope
    'SELECT * FROM (WITH "s.csv" AS (SELECT 1 AS z) SELECT * FROM "s.csv") q, "s.csv"',
    'SELECT * FROM t WHERE EXISTS (WITH "s.csv" AS (SELECT 1 AS z) SELECT 1) AND a IN (SELECT z FROM "s.csv")',
    'WITH a AS (SELECT * FROM "s.csv"), "s.csv" AS (SELECT 1 AS z) SELECT * FROM a',
    'WITH "s.csv" AS (SELECT * FROM "s.csv") SELECT * FROM "s.csv"',
    'SELECT * FROM (SELECT 1 AS z) AS "s.csv", LATERAL (SELECT * FROM "s.csv")',
    # writes and commands
    "SELECT nextval('seq')",
    "SELECT main.nextval('seq')",
    'SELECT "nextval"(\'seq\')',
    "SELECT setseed(0.5)",
    "CREATE TABLE x AS SELECT 1",
    "INSERT INTO t VALUES (1, 2)",
    "UPDATE t SET a = 1",
    "DELETE FROM t",
    "DROP TABLE t",
    "WITH a AS (DELETE FROM t RETURNING *) SELECT * FROM a",
    "ATTACH 'other.db' AS other",
    "DETACH other",
    "COPY t TO 'out.csv'",
    "COPY (SELECT 1) TO 'out.csv'",
    "EXPORT DATABASE 'dump'",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SET enable_external_access = true",
    "RESET lock_configuration",
    "PRAGMA version",
    "CALL duckdb_settings()",
    "CHECKPOINT",
    "BEGIN TRANSACTION",
    "USE memory",
    "DESCRIBE t",
    "SUMMARIZE t",
    "SHOW TABLES",
    "SELECT * FROM (DESCRIBE t)",
    "SELECT * FROM (SUMMARIZE t)",
    "SELECT * FROM (SHOW TABLES)",
    "PIVOT \"s.csv\" ON z USING count(*)",
    "SELECT * FROM (PIVOT \"s.csv\" ON z USING count(*))",
    "EXPLAIN ANALYZE SELECT * FROM read_text('s.csv')",
    "VALUES ((SELECT content FROM read_text('s.csv')))",
    # several statements, comments
    "SELECT 1; SELECT * FROM read_text('s.csv')",
    "SELECT * FROM t; ROLLBACK; DROP TABLE t",
    "SELECT 1 -- */ ; SELECT * FROM read_text('s.csv')\n; SELECT * FROM read_text('s.csv')",
    "SELECT 1 /* ; */ ; SELECT * FROM read_text('s.csv')",
    # CASE / ratio queries (split into sub-queries from their parsed tree) and ORs read term by term
    "SELECT SUM(CASE WHEN a IN (SELECT 1 FROM read_csv('s.csv')) THEN b ELSE 0 END) FROM t",
    "SELECT SUM(CASE WHEN a > 1 THEN b ELSE 0 END) / SUM(b) FROM t, read_text('s.csv')",
    "SELECT SUM(CASE WHEN a > 1 THEN b ELSE 0 END) FROM t WHERE a = 1 OR a = (SELECT 2 FROM 's.csv')",
    "SELECT SUM(CASE WHEN a > 1 THEN b ELSE 0 END) AS x FROM t; DROP TABLE t",
    # the split's shared clauses, read once for every sub-query (sql.shared_clauses): a file read in a
    # shared WHERE term, a `<>` term, the GROUP BY, or a table function joined beside the table
    "SELECT SUM(CASE WHEN a > 1 THEN 1 ELSE 0 END), SUM(b) FROM t WHERE b < (SELECT 1 FROM read_csv('s.csv'))",
    "SELECT SUM(CASE WHEN a <> 1 THEN b ELSE 0 END) / SUM(b) FROM t WHERE a <> (SELECT 1 FROM 's.csv')",
    "SELECT g, SUM(CASE WHEN a > 1 THEN 1 ELSE 0 END) FROM t GROUP BY g, (SELECT 1 FROM read_text('s.csv'))",
    "SELECT SUM(CASE WHEN a > 1 THEN b ELSE 0 END) / SUM(b) FROM t JOIN read_csv('s.csv') AS f ON t.a = f.a",
    # CASE / ratio texts share a parse across their quoted texts (case_aggregates.composite_tree's template):
    # quoted texts in a table's or a table function's place, or beside texts the template would share
    "SELECT SUM(CASE WHEN a = 'k' THEN b ELSE 0 END) FROM 's.csv'",
    "SELECT SUM(CASE WHEN a = 'k' THEN b ELSE 0 END) / SUM(b) FROM read_csv('s.csv')",
    "SELECT SUM(CASE WHEN a IN ('k', 'j') THEN b ELSE 0 END) FROM t WHERE a IN (SELECT 1 FROM 's.csv')",
    ("SELECT SUM(CASE WHEN CAST(a AS VARCHAR) LIKE 'k%' THEN b ELSE 0 END) / SUM(b) FROM t "
     "WHERE b < (SELECT length(content) FROM read_text('s.csv'))"),
    "SELECT SUM(CASE WHEN a = 'k' THEN b ELSE 0 END) FROM t, 'secret.parquet' AS 's.csv'",
    # CASE conditions and leaves whose text is generated without a copy where every node is a plain one
    # (sql.generated): a file read hidden beside such nodes, under AND / OR, in THEN or in a summed product
    "SELECT SUM(CASE WHEN a > 1 AND a IN (SELECT 1 FROM read_text('s.csv')) THEN b ELSE 0 END) FROM t",
    "SELECT SUM(CASE WHEN a = 'k' OR a = (SELECT content FROM read_text('s.csv')) THEN 1 ELSE 0 END) FROM t",
    "SELECT SUM(CASE WHEN a > 1 THEN (SELECT 1 FROM read_csv('s.csv')) ELSE 0 END) / SUM(b) FROM t",
    "SELECT SUM(b * (SELECT 1 FROM 's.csv')) / SUM(b) FROM t",
    "SELECT COUNT(CASE WHEN a BETWEEN 1 AND (SELECT 2 FROM 's.csv') THEN b END) FROM t",
    "SELECT SUM(CASE WHEN a LIKE (SELECT content FROM read_text('s.csv')) THEN b ELSE 0 END) / COUNT(*) FROM t",
    # the word CASE routes a text to the CASE / ratio split first (engine._composite_of); the letters inside a name,
    # a quoted text or an alias do not: such texts go to the plain parse first, and must be refused there too
    "SELECT SUM(a) / SUM(b) AS showcase FROM t, read_text('s.csv')",
    "SELECT SUM(a) AS case_id FROM t WHERE CAST(a AS VARCHAR) = 'lowercase' OR a = (SELECT 1 FROM 's.csv')",
    "SELECT SUM(a) / SUM(b) FROM read_csv('s.csv') AS suitcase",
    'SELECT SUM("case") / SUM(b) FROM read_csv(\'s.csv\')',
    "select sum(case when a > 1 then b else 0 end) / sum(b) from t, read_text('s.csv')",
    "SELECT SUM(CASE(a > 1) WHEN true THEN b ELSE 0 END) FROM t, read_text('s.csv')",
    "SELECT SUM(\nCASE\tWHEN a > 1 THEN b ELSE 0 END) FROM read_csv('s.csv')",
    # joins whose other side is a file or a table function (the approximate path loads the synopses of a
    # join's tables to choose the one that answers, and checks it before it answers: Engine._answering_name)
    "SELECT COUNT(*) FROM t JOIN 's.csv' ON a = z",
    "SELECT COUNT(*) FROM 's.csv' JOIN t ON z = a GROUP BY b",
    "SELECT COUNT(*) FROM t, read_csv('s.csv') WHERE a = z",
    'SELECT SUM(b) FROM t JOIN "secret.parquet" AS p ON t.a = p.z WHERE a > 3',
    # a view or a macro over a file: the parse layer lets their names through, DuckDB refuses the read
    "SELECT * FROM v",
    "SELECT * FROM t JOIN v ON true",
    "SELECT m()",
    "SELECT a FROM t WHERE m() IS NOT NULL",
]


def _make_database(path):
    """t(a, b), s.csv and secret.parquet beside ``path``, a view v and a macro m() over the csv, a
    sequence seq."""
    folder = path.parent
    (folder / "s.csv").write_text(f"z\n{SECRET}\n")
    con = duckdb.connect(str(path))
    con.execute(f"COPY (SELECT '{SECRET}' AS z) TO '{folder / 'secret.parquet'}' (FORMAT parquet)")
    con.execute("CREATE TABLE t AS SELECT range::INTEGER AS a, range * 0.5 AS b FROM range(50)")
    con.execute(f"CREATE VIEW v AS SELECT * FROM read_csv('{folder / 's.csv'}')")
    con.execute(f"CREATE MACRO m() AS (SELECT content FROM read_text('{folder / 's.csv'}'))")
    con.execute("CREATE SEQUENCE seq")
    return con


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A working directory with the secret files (relative names in :data:`ATTACKS` resolve there)."""
    path = tmp_path_factory.mktemp("security")
    _make_database(path / "db.duckdb").close()
    before = os.getcwd()
    os.chdir(path)
    yield path
    os.chdir(before)


@pytest.fixture(scope="module", params=["path", "connection"])
def engine(request, folder):
    """An Engine that opened the database itself, and one given a connection whose external access
    was switched off at run time (``SET enable_external_access = false`` cannot be undone)."""
    if request.param == "path":
        return Engine(folder / "db.duckdb")
    (folder / "given").mkdir()
    con = _make_database(folder / "given" / "db.duckdb")
    con.execute("SET enable_external_access = false")
    return Engine(con)


@pytest.mark.parametrize("sql", ATTACKS)
def test_exact_path_refuses_the_attack(engine, sql):
    with pytest.raises(ValueError) as info:
        engine.query(sql, exact=True)
    assert SECRET not in str(info.value)
    with pytest.raises(ValueError) as info:  # nor does the approximate path take it
        engine.query(sql)
    assert SECRET not in str(info.value)
    assert engine.query("SELECT COUNT(*) AS n FROM t", exact=True)["n"][0] == 50  # nothing was changed


_JOIN_ATTACKS = [sql for sql in ATTACKS if " JOIN " in sql or ", read_" in sql]


@pytest.mark.parametrize("sql", _JOIN_ATTACKS)
def test_a_join_attack_is_refused_where_a_synopsis_of_its_table_is_loaded_and_checked(tmp_path, monkeypatch, sql):
    """With a synopsis of t stored, a join of t with a file picks t's synopsis (loaded, then checked before it would
    answer) and is refused there, by the approximate and the exact path, without reading the file; prepare, which
    only loads and checks the synopsis that would answer, leaves the refusal to the query."""
    _make_database(tmp_path / "db.duckdb").close()
    monkeypatch.chdir(tmp_path)
    Engine(tmp_path / "db.duckdb").build("t", sample=40, grid=0)
    for prepared in (False, True):
        engine = Engine(tmp_path / "db.duckdb")
        if prepared:
            try:
                assert engine.prepare(sql) >= 0.0
            except ValueError as error:  # outside the subset at its parse: refused as the query would be
                assert SECRET not in str(error)
        for exact in (False, True):
            with pytest.raises(ValueError) as info:
                engine.query(sql, exact=exact)
            assert SECRET not in str(info.value)
    assert Engine(tmp_path / "db.duckdb").query("SELECT COUNT(*) AS n FROM t", exact=True)["n"][0] == 50


def test_the_attacks_fail_from_the_command_line(tmp_path, monkeypatch):
    _make_database(tmp_path / "cli.duckdb").close()
    monkeypatch.chdir(tmp_path)
    for sql in ATTACKS:
        result = CliRunner().invoke(cli.app, ["aqp", "query", str(tmp_path / "cli.duckdb"), sql, "--exact"])
        assert result.exit_code == 2, (sql, result.output)
        assert SECRET not in result.output, sql


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT a, b FROM t WHERE a < 5 ORDER BY a",
        "FROM t SELECT a WHERE a < 3 ORDER BY a",
        "SELECT COUNT(*) AS n, SUM(b) FROM T WHERE A BETWEEN 3 AND 9",
        "SELECT COUNT(*) FROM main.t",
        "SELECT x.a, y.b FROM t AS x JOIN t AS y ON x.a = y.a + 1 WHERE x.a < 4 ORDER BY 1",
        "WITH low AS (SELECT * FROM t WHERE a < 10), high AS (SELECT * FROM low WHERE a > 5) SELECT COUNT(*) FROM high",
        'WITH "Low" AS (SELECT * FROM t WHERE a < 10) SELECT COUNT(*) FROM low',
        "WITH RECURSIVE r AS (SELECT 1 AS k UNION ALL SELECT k + 1 FROM r WHERE k < 5) SELECT SUM(k) FROM r",
        "SELECT a, (SELECT MAX(b) FROM t AS u WHERE u.a < t.a) AS m FROM t WHERE a < 4 ORDER BY a",
        "SELECT * FROM t, LATERAL (SELECT t.a * 2 AS twice) WHERE a < 3 ORDER BY a",
        "SELECT * FROM (VALUES (1, 'x'), (2, 'y')) AS w(k, s) ORDER BY k",
        "SELECT a, SUM(b) OVER (ORDER BY a) AS running FROM t WHERE a < 5 ORDER BY a",
        "SELECT a FROM t WHERE a < 2 UNION ALL SELECT a FROM t WHERE a > 47 ORDER BY a",
        "SELECT unnest([1, 2, 3]) AS k",
        "SELECT a FROM t WHERE a < 5 ORDER BY a LIMIT 2 OFFSET 1",
        "SELECT COUNT(*) FROM t -- a comment\n",
    ],
)
def test_exact_path_answers_read_only_queries_as_duckdb_does(folder, sql):
    """The allow-list keeps DuckDB's read-only SQL: joins, CTEs (recursive too), subqueries, LATERAL
    subqueries, VALUES, windows, set operations, any case of the names; answers as DuckDB's own."""
    engine = Engine(folder / "db.duckdb")
    pd.testing.assert_frame_equal(engine.query(sql, exact=True), engine.con.execute(sql).df())


def test_cte_scopes_decide_what_is_a_table():
    """A CTE hides a table name only in its scope (and, non-recursive, not in its own body or before it)."""
    assert read_only_sql('SELECT * FROM (WITH "s.csv" AS (SELECT 1 AS z) SELECT * FROM "s.csv") q, "s.csv"')[1] == \
        {("s.csv",)}
    assert read_only_sql("WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a")[1] == {("b",)}
    assert read_only_sql("WITH a AS (SELECT * FROM a) SELECT * FROM a")[1] == {("a",)}
    assert read_only_sql("WITH RECURSIVE a AS (SELECT 1 AS k UNION ALL SELECT k FROM a) SELECT * FROM a")[1] == set()
    assert read_only_sql("WITH A AS (SELECT 1) SELECT * FROM t, a, main.a")[1] == {("t",), ("main", "a")}
    assert read_only_sql("WITH a AS (SELECT 1) SELECT * FROM a UNION SELECT * FROM (SELECT * FROM a)")[1] == set()


def test_comments_do_not_reach_the_database():
    text, _ = read_only_sql("SELECT 1 -- */ ; DROP TABLE t\n")
    assert text == "SELECT 1"


# --- the DuckDB layer, with the parse layer bypassed ------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "SELECT * FROM read_text('s.csv')",
        "SELECT * FROM read_csv('s.csv')",
        'SELECT * FROM "s.csv"',
        "SELECT * FROM 'secret.parquet'",
        "SELECT * FROM glob('*')",
        "SELECT * FROM v",
        "SELECT m()",
    ],
)
def test_duckdb_refuses_file_reads_the_parse_layer_would_let_through(engine, text):
    with pytest.raises(ValueError, match="file") as info:
        engine._run(text)
    assert SECRET not in str(info.value)


@pytest.mark.parametrize("text", ["CREATE TABLE x AS SELECT 1", "SELECT 1; DROP TABLE t", "ROLLBACK",
                                  "ATTACH 'other.db'", "SET threads = 1"])
def test_duckdb_runs_one_select_statement_only(engine, text):
    with pytest.raises(ValueError, match="one SELECT"):
        engine._run(text)


def test_duckdb_runs_exact_queries_in_a_read_only_transaction(engine):
    with pytest.raises(duckdb.TransactionException, match="read-only"):
        engine._run("SELECT nextval('seq')")
    assert engine._run("SELECT COUNT(*) AS n FROM t")["n"][0] == 50  # the transaction was rolled back
    engine.con.execute("BEGIN TRANSACTION")
    try:
        with pytest.raises(ValueError, match="commit or roll it back"):
            engine._run("SELECT 1")
    finally:
        engine.con.execute("ROLLBACK")


def test_an_engine_opened_from_a_path_is_locked_down(folder):
    engine = Engine(folder / "db.duckdb")
    for setting in ("SET enable_external_access = true", "SET threads = 1", "RESET lock_configuration"):
        with pytest.raises(duckdb.InvalidInputException, match="locked"):
            engine.con.execute(setting)
    secret_frame = pd.DataFrame({"z": [SECRET]})  # DuckDB's Python replacement scans would read it
    with pytest.raises(duckdb.CatalogException):
        engine.con.execute("SELECT * FROM secret_frame")
    assert secret_frame.size == 1
    with pytest.raises(ValueError, match="already open in this process"):
        Engine(folder / "db.duckdb", read_only=True)  # another configuration of the same file


def test_a_given_connection_that_can_read_files_gets_no_exact_answers_but_compare_works():
    con = duckdb.connect(":memory:")
    rng = np.random.default_rng(0)
    con.execute("CREATE TABLE t AS SELECT * FROM (SELECT unnest(?) AS x)", [rng.normal(size=2000).tolist()])
    engine = Engine(con)
    with pytest.raises(ValueError, match=r"enable_external_access': False"):
        engine.query("SELECT COUNT(*) FROM t", exact=True)
    assert con.execute("SELECT current_setting('enable_external_access')").fetchone()[0]  # left as it was
    engine.build("t", sample=500)
    compared = engine.compare("SELECT COUNT(*) FROM t WHERE x > 0")
    assert compared["count_star() exact"][0] == con.execute("SELECT COUNT(*) FROM t WHERE x > 0").fetchone()[0]


# --- identifiers that differ only in case -----------------------------------------------------------


@pytest.fixture(scope="module")
def mixed_case():
    """A table "Flights" with columns "DepDelay", "Distance" and "Carrier", and its synopsis."""
    con = duckdb.connect(":memory:", config={"enable_external_access": False})
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"DepDelay": rng.normal(100, 30, 5000), "Distance": rng.gamma(3, 300, 5000),
                          "Carrier": rng.choice(["AA", "UA"], 5000)})
    con.register("frame", frame)
    con.execute('CREATE TABLE "Flights" AS SELECT * FROM frame')
    con.unregister("frame")
    engine = Engine(con)
    engine.build("Flights", group_by=["Carrier"], sample=2000, regression=[("DepDelay", "Distance")])
    return engine


@pytest.mark.parametrize(
    ("written", "stored"),
    [
        ("SELECT COUNT(*), AVG(depdelay) FROM flights WHERE distance > 900",
         'SELECT COUNT(*), AVG(depdelay) FROM "Flights" WHERE "Distance" > 900'),
        ("SELECT COUNT(*) FROM FLIGHTS WHERE DEPDELAY BETWEEN 80 AND 120 AND distance < 800",
         'SELECT COUNT(*) FROM "Flights" WHERE "DepDelay" BETWEEN 80 AND 120 AND "Distance" < 800'),
        ('SELECT SUM("DEPDELAY") FROM "flights" WHERE "distance" > 500 AND Distance < 1500',
         'SELECT SUM("DEPDELAY") FROM "Flights" WHERE "Distance" > 500 AND "Distance" < 1500'),
        ("SELECT Carrier, COUNT(*) FROM flights WHERE depdelay > 100 AND CARRIER IN ('AA', 'UA') GROUP BY carrier",
         """SELECT carrier, COUNT(*) FROM "Flights" WHERE "DepDelay" > 100 AND "Carrier" IN ('AA', 'UA')
            GROUP BY carrier"""),
    ],
)
def test_names_match_case_insensitively_as_in_duckdb(mixed_case, written, stored):
    """Any case of a table's or column's name answers as the stored one does, with DuckDB's column
    names (group columns as stored, aggregates as written), and compares with DuckDB's answer."""
    answer = mixed_case.query(written)
    assert list(answer.columns) == list(mixed_case.query(written, exact=True).columns)
    np.testing.assert_array_equal(answer.select_dtypes("number").to_numpy(),
                                  mixed_case.query(stored).select_dtypes("number").to_numpy())
    compared = mixed_case.compare(written)
    assert compared.filter(like="rel. error").to_numpy().max() < 0.1


def test_regression_answers_take_any_case(mixed_case):
    sql = "SELECT AVG(depdelay) FROM flights WHERE distance BETWEEN 500 AND 1500"
    stored = 'SELECT AVG("DepDelay") FROM "Flights" WHERE "Distance" BETWEEN 500 AND 1500'
    assert mixed_case.query(sql, method="regression").iloc[0, 0] == \
        mixed_case.query(stored, method="regression").iloc[0, 0]


def test_unknown_names_still_say_what_exists(mixed_case):
    with pytest.raises(ValueError, match="no synopsis of table 'flight'"):
        mixed_case.query("SELECT COUNT(*) FROM flight WHERE distance > 1")
    with pytest.raises(ValueError, match="has no column 'distanc'"):
        mixed_case.query("SELECT COUNT(*) FROM flights WHERE distanc > 1")
    with pytest.raises(UnsupportedQuery, match="GROUP BY / IN / = on 'origin'"):
        mixed_case.query("SELECT origin, COUNT(*) FROM flights GROUP BY origin")


@pytest.mark.parametrize("sql", [*ATTACKS[:8], "SELECT * FROM 's.csv'", "SELECT COUNT(*) FROM t, 'secret.parquet'"])
def test_the_catalog_listing_kept_between_exact_answers_admits_no_attack(engine, sql):
    """The engine keeps DuckDB's catalog listing between exact answers (read again on a name it lacks):
    with it kept, the attacks are still refused, by exact=True and by max_rel_error='s fallback."""
    assert engine.query("SELECT COUNT(*) AS n FROM t", exact=True)["n"][0] == 50  # the listing is kept now
    for options in ({"exact": True}, {"max_rel_error": 0.01}):
        with pytest.raises(ValueError) as info:
            engine.query(sql, **options)
        assert SECRET not in str(info.value)
    assert engine.query("SELECT COUNT(*) AS n FROM t", exact=True)["n"][0] == 50


#: The CASE / ratio attacks: answered four times each, all from the shared parse of their template where
#: one applies (case_aggregates.composite_tree).
_COMPOSITE_ATTACKS = [sql for sql in ATTACKS if "CASE" in sql]


@pytest.mark.parametrize("sql", _COMPOSITE_ATTACKS)
def test_a_composite_attack_stays_refused_when_its_template_is_shared(engine, sql):
    """A text seen again (and one that differs only in its quoted texts) takes its template's parse: it is
    refused as the first was, by every path, at any bound."""
    from parzen.aqp import case_aggregates

    variant = sql.replace("'k'", "'q'").replace("'j'", "'r'")
    for text in (sql, sql, variant, variant):
        for options in ({}, {"exact": True}, {"max_rel_error": 0.01}, {"max_rel_error": 1e-300}):
            with pytest.raises(ValueError) as info:
                engine.query(text, **options)
            assert SECRET not in str(info.value)
    assert case_aggregates._template.cache_info().hits > 0  # the template's parse was read again
    assert engine.query("SELECT COUNT(*) AS n FROM t", exact=True)["n"][0] == 50


@pytest.mark.parametrize("sql", ATTACKS)
def test_an_attack_stays_refused_when_its_text_template_is_shared(engine, sql):
    """Any text, its quoted texts cut out as holes (parzen.aqp.text_templates): the attack asked twice, and a
    variant with other quoted texts after it (the template's tree copied and filled), is refused each time by
    both paths, with no secret in the message."""
    variant = re.sub(r"'([^']*)'", lambda m: f"'{m.group(1)}x'", sql)
    for text in (sql, sql, variant, variant):
        for options in ({}, {"exact": True}):
            with pytest.raises(ValueError) as info:
                engine.query(text, **options)
            assert SECRET not in str(info.value)


#: A plain query whose one quoted text is a hole of its template: benign values, then hostile ones (SQL, file
#: names, a table function's text) that share the benign text's template and must stay values.
_TEXT_HOLE_SHAPES = [
    "SELECT COUNT(*) AS n FROM t WHERE CAST(a AS VARCHAR) = '{}'",
    "SELECT COUNT(*) AS n FROM t WHERE CAST(a AS VARCHAR) IN ('{}', '49')",
    "SELECT COUNT(*) AS n FROM t WHERE CAST(a AS VARCHAR) LIKE '{}' AND a < 40",
]
_TEXT_HOLE_VALUES = ["3", "s.csv", "read_text(s.csv)", "1 OR 1=1", ") UNION ALL SELECT * FROM read_csv(s.csv",
                     "secret.parquet; DROP TABLE t", "%"]


@pytest.mark.parametrize("shape", _TEXT_HOLE_SHAPES)
def test_hostile_texts_in_a_shared_template_are_values(engine, shape):
    """Each value fills the shape's shared template: the query parses as its own text does, and every answer
    (exact, or refused with no secret) counts the rows whose text equals / matches the value, as DuckDB
    counts them on a connection of its own; no table is dropped."""
    from parzen.aqp import sql as aqp_sql

    reference = duckdb.connect()  # t as _make_database makes it, in a database of its own
    reference.execute("CREATE TABLE t AS SELECT range::INTEGER AS a, range * 0.5 AS b FROM range(50)")
    for value in _TEXT_HOLE_VALUES:
        text = shape.format(value)
        try:
            as_written = aqp_sql._query(aqp_sql._tree(text), [])
        except ValueError:
            as_written = None
        if as_written is not None:
            assert aqp_sql.parse(text) == as_written
        try:
            exact = engine.query(text, exact=True)["n"][0]
        except ValueError as err:
            assert SECRET not in str(err)
            continue
        assert exact == reference.execute(text).fetchone()[0]
    assert engine.query("SELECT COUNT(*) AS n FROM t", exact=True)["n"][0] == 50


def _forget_every_parse():
    """Empty every per-text and per-template cache of :mod:`parzen.aqp` (parses, splits, templates)."""
    import sys

    for name, module in list(sys.modules.items()):
        if name.startswith("parzen.aqp"):
            for value in vars(module).values():
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()


def test_a_shared_template_answers_as_the_text_parsed_alone(tmp_path):
    """Benign CASE / ratio texts that differ only in their quoted texts: answered from the template's tree
    with their own texts put back, the same answers as each text's own parse."""
    from unittest import mock

    from parzen.aqp import case_aggregates, text_templates

    con = duckdb.connect(str(tmp_path / "cases.duckdb"))
    con.execute("CREATE TABLE s AS SELECT range % 7 AS x, (range % 3)::VARCHAR AS g, range * 0.25 AS y "
                "FROM range(5000)")
    con.close()
    engine = Engine(tmp_path / "cases.duckdb")  # opened locked down by the Engine: exact=True answers too
    engine.build("s", columns=["x", "y"], group_by=["g"], sample=2000, seed=1)
    texts = [f"SELECT SUM(CASE WHEN g = '{k}' THEN y ELSE 0 END) / SUM(y) AS share FROM s WHERE g <> '{j}'"
             for k, j in (("0", "1"), ("1", "2"), ("2", "0"), ("0", "2"))]
    _forget_every_parse()
    shared = [engine.query(text, with_error=True) for text in texts]
    assert case_aggregates._template.cache_info().currsize == 1  # one template, parsed once, shared
    alone = []
    with mock.patch.object(text_templates, "cut", return_value=None):  # every text parsed as written
        for text in texts:
            _forget_every_parse()
            alone.append(engine.query(text, with_error=True))
    assert case_aggregates._template.cache_info().currsize == 0
    for one, other in zip(shared, alone):
        pd.testing.assert_frame_equal(one, other, check_exact=True)
    exact = [engine.query(text, exact=True)["share"][0] for text in texts]
    assert np.allclose([one["share"][0] for one in shared], exact, rtol=1e-9)


@pytest.mark.parametrize("name", ["cmp(a,b); DROP TABLE t", "cmp(a,b) FROM t; DROP TABLE t --",
                                  "cmp(a,read_csv('s.csv'))", "cmp(a,\"b\"\" OR 1=1\")"])
def test_comparison_dimension_names_are_never_sql(name):
    """cube= names of comparison dimensions (cmp(a,b)) must name two columns of the table: anything else is
    refused before a query runs, and the table is unchanged."""
    con = duckdb.connect(":memory:", config={"enable_external_access": False})
    con.execute("CREATE TABLE t AS SELECT range::INTEGER AS a, (range % 7)::INTEGER AS b, "
                "CASE WHEN range % 2 = 0 THEN 'x' ELSE 'y' END AS g FROM range(500)")
    with pytest.raises(ValueError):
        Engine(con).build("t", group_by=["g"], sample=200, seed=1, cube=[["g", name]])
    assert con.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 500


@pytest.mark.parametrize("sql", [*ATTACKS[:8], "SELECT * FROM 's.csv'", "SELECT COUNT(*) FROM t; DROP TABLE t",
                                 "SELECT SUM(CASE WHEN a IN (SELECT 1 FROM read_csv('s.csv')) THEN b ELSE 0 END) FROM t",
                                 "SELECT SUM(b) FROM t WHERE a < (SELECT length(content) FROM read_text('s.csv'))"])
def test_workload_queries_choose_tables_and_are_never_run(folder, sql):
    """build(workload=[...]) reads its example queries with parzen's parser only: a query that would read a
    file or change the database is refused by name or skipped with a warning, the secret never appears,
    and the table is unchanged (the tables are built from the synopsis's own columns)."""
    import warnings

    path = folder / "workload.duckdb"
    if not path.exists():
        _make_database(path).close()
    engine = Engine(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            engine.build("t", workload=[sql, "SELECT SUM(b) FROM t WHERE a < 10"], sample=40, seed=1)
        except ValueError as error:
            assert SECRET not in str(error)
        else:  # built: the hostile query skipped and named by the build's warning
            assert any("workload:" in str(w.message) for w in caught)
    assert all(SECRET not in str(w.message) for w in caught)
    assert engine.query("SELECT COUNT(*) AS n FROM t", exact=True)["n"][0] == 50
