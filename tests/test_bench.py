"""The benchmark harness (``parzen bench``): a tiny run writes JSON, markdown and plots whose
ratios follow from the times, skips missing peers with the reason, and the CLI drives it."""

import json
import statistics
import time
from itertools import groupby

import pytest
from typer.testing import CliRunner

from parzen import cli
from parzen.benchmark import bench, rpeers
from parzen.benchmark.timing import measure, predicted_seconds

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
runner = CliRunner()


@pytest.fixture
def no_r(monkeypatch):
    """Hide R whether or not it is installed, so the run is the same everywhere (and short)."""
    monkeypatch.setattr(rpeers, "_probe", lambda: ("R hidden by the test", {}))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(rpeers, "_probe", lambda: ("R hidden by the test", {}))
        result = bench(["plugin", "kde"], scale="tiny", repeat=2, dtypes=("float64",), output_dir=out)
    return out, result


def test_tiny_run_writes_json_markdown_and_plot(tiny):
    out, result = tiny
    assert {p.name for p in result.files} == {"cpu_backend.json", "cpu_backend.md", "cpu_backend_plugin.png"}
    assert (out / "cpu_backend_plugin.png").read_bytes().startswith(PNG_MAGIC)
    data = json.loads((out / "cpu_backend.json").read_text())
    assert data["rows"] == json.loads(json.dumps(result.rows))
    assert data["scale"] == "tiny" and data["repeat"] == 2
    machine = data["machine"]
    assert machine["numba_threads"] >= 1 and machine["versions"]["numpy"] and machine["cpu"]
    text = (out / "cpu_backend.md").read_text()
    assert "## PLUGIN" in text and "## KDE" in text and "speedup vs sequential" in text
    assert "no plug-in selector" in text  # the problem's note


def test_ratios_follow_from_the_times(tiny):
    rows = tiny[1].rows
    for _, group in groupby(rows, key=lambda r: (r["problem"], r["n"], r["d"])):
        group = [r for r in group if r["status"] == "ok"]
        sequential = next(r for r in group if r["implementation"] == "parzen sequential")
        exact_peers = [r["seconds"] for r in group if r["exact"] and not r["implementation"].startswith("parzen")]
        for row in group:
            assert row["seconds"] == pytest.approx(statistics.median(row["samples"]))
            assert 1 <= row["runs"] == len(row["samples"]) <= 2
            assert row["speedup"] == pytest.approx(sequential["seconds"] / row["seconds"])
            if exact_peers:
                assert row["vs_best_exact_peer"] == pytest.approx(min(exact_peers) / row["seconds"])
            else:
                assert row["vs_best_exact_peer"] is None


def test_results_agree_and_missing_peers_are_skipped(tiny):
    rows = tiny[1].rows
    assert {(r["implementation"], r["threads"]) for r in rows if r["implementation"].startswith("parzen")} >= {
        ("parzen sequential", 1), ("parzen cpu", 1)}
    for row in rows:
        if row["implementation"].startswith("parzen"):
            assert row["rel_diff"] < 1e-10, row
        elif row["implementation"].startswith("R "):
            assert row["status"] == "skipped: R hidden by the test"
        elif row["status"] == "ok" and row["exact"] and row["problem"] == "KDE":
            assert row["rel_diff"] < 1e-8, row  # SciPy, scikit-learn, statsmodels, KDEpy NaiveKDE: same densities
    assert any(r["implementation"] == "R ks::hpi" for r in rows)


def test_budget_rule_and_prediction():
    calls = []
    timing = measure(lambda: calls.append(1) or len(calls), repeat=3, max_seconds=None)
    assert len(calls) == 4 and len(timing.samples) == 3 and timing.value == 4 and not timing.first_only
    slow = measure(lambda: time.sleep(0.02), repeat=3, max_seconds=0.01)
    assert slow.first_only and slow.samples == (slow.first,)
    assert predicted_seconds((100, 1.0), 200) == pytest.approx(4.0)
    assert predicted_seconds(None, 200) is None


def test_cli_bench_help_and_tiny_run(tmp_path, no_r):
    shown = runner.invoke(cli.app, ["bench", "--help"])
    assert shown.exit_code == 0 and "--only" in shown.output and "--max-seconds" in shown.output
    done = runner.invoke(
        cli.app, ["bench", "--tiny", "--only", "plugin", "--repeat", "1", "--no-peers", "-o", str(tmp_path)]
    )
    assert done.exit_code == 0, done.output
    assert "PLUGIN" in done.output and (tmp_path / "cpu_backend.md").exists()
    rows = json.loads((tmp_path / "cpu_backend.json").read_text())["rows"]
    assert {r["implementation"] for r in rows} == {"parzen sequential", "parzen cpu"}


def test_cli_bench_rejects_unknown_problem(tmp_path):
    done = runner.invoke(cli.app, ["bench", "--only", "plugin,nonsense", "-o", str(tmp_path)])
    assert done.exit_code == 2 and "unknown problem 'nonsense'" in done.output
