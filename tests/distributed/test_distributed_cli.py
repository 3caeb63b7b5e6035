"""``parzen bandwidth --scheduler``: the selector on a Dask cluster reached by address, with the
in-process answers; and the errors (unreachable scheduler, no Dask, data the workers cannot read)."""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

pytest.importorskip("dask.dataframe")
pytest.importorskip("pyarrow")
from distributed import LocalCluster

from parzen import bandwidth as bw
from parzen import cli
from parzen.distributed import cluster

runner = CliRunner()


def invoke(*args):
    return runner.invoke(cli.app, ["bandwidth", *map(str, args)], env={"COLUMNS": "80"})


def as_json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def address():
    """The address of two worker processes of one thread, as a deployment's scheduler."""
    with LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=":0") as local:
        yield local.scheduler_address


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    """(glob of 4 Parquet files, the frame): a bimodal x with NULLs in rows 7 and 300, and y = x / 2 + noise."""
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.normal(0, 1, 6_000), rng.normal(4, 0.5, 2_000)])
    frame = pd.DataFrame({"x": x, "y": 0.5 * x + rng.normal(size=x.size), "label": "a"})
    frame.loc[[7, 300], "x"] = np.nan
    folder = tmp_path_factory.mktemp("parts")
    for k, start in enumerate(range(0, len(frame), 2_000)):
        frame.iloc[start: start + 2_000].to_parquet(folder / f"part-{k}.parquet")
    return str(folder / "part-*.parquet"), frame


def test_binned_on_the_cluster_equals_in_process(address, parts):
    pattern, frame = parts
    x = frame["x"].dropna().to_numpy()
    got = as_json(invoke(pattern, "-c", "x", "--scheduler", address, "--json"))
    want = bw.selection("plugin", x, method="binned")
    assert (got["computation"], got["grid_size"], got["n"]) == ("binned", list(want.grid_size), x.size)
    assert got["h"] == pytest.approx(want.value, rel=1e-12)
    assert got["ran_on"] == f"Dask cluster {address}, 2 workers x 1 thread" and not got["streamed"]
    both = frame[["x", "y"]].dropna().to_numpy()
    matrix = as_json(invoke(pattern, "-c", "x", "-c", "y", "-m", "lscv_H", "--binned", "--scheduler", address, "--json"))
    np.testing.assert_allclose(matrix["H"], bw.lscv_H(both, method="binned"), rtol=1e-8)
    table = invoke(pattern, "-c", "x", "--scheduler", address)
    assert table.exit_code == 0, table.output
    assert f"Dask cluster {address}, 2 workers x 1 thread" in " ".join(table.stdout.replace("│", " ").split())
    assert max(map(len, table.stdout.splitlines())) <= 80


def test_exact_sums_pairs_on_the_workers(address, parts):
    pattern, frame = parts
    got = as_json(invoke(pattern, "-c", "x", "--exact", "--scheduler", address, "--json"))
    assert (got["computation"], got["dropped_rows"]) == ("exact", 2)
    assert got["h"] == pytest.approx(bw.plugin(frame["x"].dropna(), method="exact"), rel=1e-12)


def test_local_starts_a_cluster_for_the_run(parts, monkeypatch):
    pattern, frame = parts
    started = []

    class Recorded(LocalCluster):  # the machine's split of cores, as the CLI asks for it
        def __init__(self, **options):
            started.append(options)
            super().__init__(**options, n_workers=2, threads_per_worker=1)

    monkeypatch.setattr("distributed.LocalCluster", Recorded)
    got = as_json(invoke(pattern, "-c", "x", "-m", "scott", "--scheduler", "local", "--json"))
    assert started == [{"processes": True, "dashboard_address": None}]
    assert got["ran_on"].startswith("LocalCluster tcp://") and got["ran_on"].endswith("(started for this run), 2 workers x 1 thread")
    assert got["h"] == pytest.approx(bw.scott(frame["x"].dropna()), rel=1e-12)


def test_an_unreachable_scheduler_times_out_naming_it(parts, monkeypatch):
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1.0)
    result = invoke(parts[0], "-c", "x", "--scheduler", "tcp://127.0.0.1:9")
    assert result.exit_code == 2
    assert "error: cannot reach the Dask scheduler at tcp://127.0.0.1:9 within 1 s" in result.output
    bad = invoke(parts[0], "-c", "x", "--scheduler", "nonsense")
    assert bad.exit_code == 2 and "error: --scheduler 'nonsense' is not a Dask scheduler address" in bad.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{csv}", "-c", "x"], "error: --scheduler reads Parquet data (a file, directory or glob), not 'data.csv'"),
        (["{csv}", "--table", "t", "-c", "x"], "error: --scheduler reads Parquet data, not a DuckDB table"),
    ],
)
def test_data_the_workers_cannot_read_are_refused(tmp_path, args, message):
    csv = tmp_path / "data.csv"
    csv.write_text("x\n1\n2\n")
    result = invoke(*[a.format(csv=csv) for a in args], "--scheduler", "tcp://127.0.0.1:9")
    assert result.exit_code == 2 and message in " ".join(result.output.split())


def test_files_and_columns_are_checked_before_connecting(parts, tmp_path):
    """The unreachable scheduler is never tried: each error comes at once, not after the timeout."""
    cases = ((parts[0], "z", "error: no column 'z' in the Parquet data; available: x, y, label"),
             (parts[0], "label", "error: column 'label' is not numeric"),
             (tmp_path / "none-*.parquet", "x", "error: no Parquet file at"))
    for path, column, message in cases:
        for exact in ([], ["--exact"]) if column == "x" else ([],):
            result = invoke(path, "-c", column, *exact, "--scheduler", "tcp://127.0.0.1:9")
            assert result.exit_code == 2 and message in " ".join(result.output.split())


def test_without_dask_the_error_names_the_extra(parts, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    result = invoke(parts[0], "-c", "x", "--scheduler", "local")
    assert result.exit_code == 2
    assert 'parzen bandwidth --scheduler needs the package \'distributed\', which is not installed: pip install "parzen[dask]"' in " ".join(result.output.split())


def test_help_names_the_extra_and_where_exact_reads_the_rows():
    result = runner.invoke(cli.app, ["bandwidth", "--help"], env={"COLUMNS": "80"})
    text = " ".join(result.output.replace("│", " ").split())
    assert 'pip install "parzen[dask]"' in text and "rows are read into this process's memory" in text


# -- parzen aqp build --from: a synopsis of Parquet files built on the cluster ------------------


def test_aqp_build_from_parquet_on_the_cluster_then_query_both_ways(address, parts, tmp_path):
    """The synopsis is built on the workers and stored in a new database file; queries on it answer
    approximately and, with --exact, from the Parquet files."""
    pattern, frame = parts
    database = tmp_path / "s.duckdb"
    built = runner.invoke(cli.app, ["aqp", "build", str(database), "t", "--from", pattern, "--scheduler", address,
                                    "--sample", "2000"], env={"COLUMNS": "200"})
    assert built.exit_code == 0, built.output
    text = " ".join(built.stdout.split())
    assert f"built the synopsis of t: {len(frame)} rows, 2 columns" in text
    assert f"on Dask cluster {address}, 2 workers x 1 thread" in text
    exact = runner.invoke(cli.app, ["aqp", "query", str(database), "SELECT COUNT(x) FROM t", "--exact"])
    assert exact.exit_code == 0, exact.output
    assert str(frame["x"].count()) in exact.stdout
    approx = runner.invoke(cli.app, ["aqp", "query", str(database), "SELECT COUNT(*) FROM t"])
    assert approx.exit_code == 0 and str(len(frame)) in approx.stdout and "from the totals" in approx.stdout


def test_aqp_build_from_starts_a_local_cluster_by_default(parts, tmp_path, monkeypatch):
    started = []

    class Recorded(LocalCluster):
        def __init__(self, **options):
            started.append(options)
            super().__init__(**options, n_workers=1, threads_per_worker=1)

    monkeypatch.setattr("distributed.LocalCluster", Recorded)
    built = runner.invoke(cli.app, ["aqp", "build", str(tmp_path / "s.duckdb"), "t", "--from", parts[0],
                                    "--sample", "500", "--grid", "0"], env={"COLUMNS": "200"})
    assert built.exit_code == 0, built.output
    assert started == [{"processes": True, "dashboard_address": None}] and "(started for this run)" in built.stdout


def test_aqp_build_from_checks_the_files_first_and_scheduler_needs_from(tmp_path):
    missing = runner.invoke(cli.app, ["aqp", "build", str(tmp_path / "s.duckdb"), "t", "--from",
                                      str(tmp_path / "none-*.parquet"), "--scheduler", "tcp://127.0.0.1:9"])
    assert missing.exit_code == 2 and "error: no Parquet file at" in " ".join(missing.output.split())
    alone = runner.invoke(cli.app, ["aqp", "build", str(tmp_path / "s.duckdb"), "t", "--scheduler", "local"])
    assert alone.exit_code == 2 and "add --from PARQUET" in " ".join(alone.output.split())
