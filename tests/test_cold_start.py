"""Cold start: ``import parzen`` loads nothing heavy, and the command line imports what a command needs.

Each check runs in a fresh interpreter (this process has imported everything already) and looks at
``sys.modules``; none is timed (benchmarks/cold_start.py times them).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import parzen
from parzen._selector_names import SELECTOR_NAMES

ROOT = Path(__file__).resolve().parents[1]
#: Libraries that ``import parzen`` must leave to the first use of the part that needs them.
HEAVY = ("numba", "scipy", "torch", "triton", "dask", "distributed", "matplotlib", "pandas", "numpy", "duckdb",
         "sqlglot", "typer", "rich")


def _loaded_after(code: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter has imported after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(m for m in {modules!r} if m in sys.modules)))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, env=env,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_import_parzen_imports_no_heavy_library():
    assert _loaded_after("import parzen", HEAVY) == []


def test_the_public_names_load_on_first_use():
    loaded = _loaded_after("import parzen\nparzen.KDE", HEAVY)
    assert "numpy" in loaded and "scipy" in loaded  # KDE's own dependencies, now that it was asked for
    assert _loaded_after("from parzen import MissingExtraError, TiedDataWarning", ("scipy", "numba")) == []


def test_public_api_is_unchanged():
    from parzen import KDE, CostWarning, LSCVWarning, MissingExtraError, TiedDataWarning, bandwidth

    assert parzen.__all__ == ["KDE", "CostWarning", "LSCVWarning", "MissingExtraError", "TiedDataWarning",
                              "__version__", "bandwidth"]
    assert set(parzen.__all__) <= set(dir(parzen))
    assert (KDE.__module__, bandwidth.__name__) == ("parzen.kde", "parzen.bandwidth")
    assert issubclass(CostWarning, Warning) and issubclass(LSCVWarning, Warning)
    assert issubclass(TiedDataWarning, Warning) and issubclass(MissingExtraError, ImportError)
    assert callable(bandwidth.plugin)  # the function, not the submodule parzen.bandwidth.plugin
    with pytest.raises(AttributeError, match="no attribute 'kde_estimator'"):
        parzen.kde_estimator  # noqa: B018


def test_selector_names_are_the_registry_keys_in_order():
    from parzen.bandwidth import SELECTORS

    assert tuple(SELECTORS) == SELECTOR_NAMES


@pytest.mark.parametrize("command", ["--help", "aqp query --help"])
def test_the_command_line_starts_without_scipy_or_numba(command):
    code = f"import sys\nsys.argv = ['parzen', *{command.split()!r}]\nfrom parzen.cli import app\ntry:\n    app()\n" \
           "except SystemExit:\n    pass"
    assert _loaded_after(code, ("scipy", "numba", "matplotlib", "torch", "dask")) == []


def test_no_query_compiles_after_the_engine_loads_a_synopsis():
    """Loading a synopsis loads the box integrals (Numba's cache, or one compilation per installation);
    the queries then call them with the types they were loaded for, so none compiles in a query."""
    duckdb = pytest.importorskip("duckdb")
    np = pytest.importorskip("numpy")
    from parzen.aqp import Engine, _box, _cell_sums, _row_polynomials

    rng = np.random.default_rng(0)
    con = duckdb.connect(":memory:", config={"enable_external_access": False})
    con.execute("CREATE TABLE t (x DOUBLE, y DOUBLE, k INTEGER, g VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)",
                    [(float(a), float(b), int(c), str(d)) for a, b, c, d in
                     zip(rng.gamma(2.0, 3.0, 400), rng.normal(size=400), rng.integers(0, 9, 400), rng.choice(["a", "b"], 400))])
    Engine(con).build("t", group_by=["g"], sample=200, grid=64)
    engine = Engine(con)  # a new engine loads the stored synopsis
    engine.synopsis("t")
    compiled = [_box._box_sums, _box.sorted_mass, _box.box_masses, _box.box_terms, _cell_sums.cell_sums,
                _cell_sums.domain_cell_sums, _cell_sums.add_scaled, _cell_sums.add_scaled_kept, _cell_sums.terms_of_kept,
                _cell_sums.add_scaled_rows, _cell_sums.add_scaled_kept_rows, _cell_sums.stratum_sums_of_runs,
                _cell_sums.stratum_sums_of_last_scaled, _cell_sums.stratum_sums_of_two_scaled,
                _cell_sums.one_domain_cells, _cell_sums.one_domain_df, _cell_sums.weighted_total,
                _row_polynomials.polynomial_rows]
    assert all(type(f._cache).__name__ == "FunctionCache" for f in compiled)  # cache=True: on disk
    before = [list(f.signatures) for f in compiled]
    for sql in ("SELECT COUNT(*), AVG(y) FROM t WHERE x BETWEEN 1 AND 5 AND y > 0",
                "SELECT g, SUM(y) FROM t WHERE x > 2 GROUP BY g",
                "SELECT COUNT(*) FROM t WHERE k < 4 AND g = 'a'",
                "SELECT FLOOR(x / 2) AS bin, COUNT(*) FROM t WHERE y < 1 GROUP BY bin",
                ("SELECT 100.00 * SUM(CASE WHEN k IN (1, 2) THEN x * (1 - y) ELSE 0 END) / SUM(x * (1 - y)) FROM t "
                 "WHERE x < 6"),
                "SELECT g, SUM(CASE WHEN k = 3 THEN x ELSE 0 END) / SUM(x) FROM t WHERE y > -1 GROUP BY g"):
        engine.query(sql)
        engine.query(sql, with_error=True)
    assert [list(f.signatures) for f in compiled] == before


def test_an_approximate_query_from_the_command_line_leaves_the_selectors_out(tmp_path):
    """``parzen aqp query`` reads a stored synopsis: it needs neither the bandwidth selectors (SciPy's
    optimisers, the binned estimators) nor KDE, matplotlib or the GPU and Dask stacks."""
    duckdb = pytest.importorskip("duckdb")
    from parzen.aqp import Engine

    database = tmp_path / "t.duckdb"
    with duckdb.connect(str(database)) as con:
        con.execute("CREATE TABLE t AS SELECT random() * 100 AS x, random() AS y FROM range(2000)")
    engine = Engine(database)
    engine.build("t", sample=500, grid=64)
    engine.con.close()
    code = ("import sys\n"
            f"sys.argv = ['parzen', 'aqp', 'query', {str(database)!r}, 'SELECT COUNT(*) FROM t WHERE x > 5 AND y < 0.5']\n"
            "from parzen.cli import app\n"
            "try:\n    app()\nexcept SystemExit as exit:\n    assert not exit.code, exit.code\n")
    # (Numba itself imports scipy.linalg when it loads compiled code: not listed)
    heavy = ("parzen.bandwidth", "parzen.kde", "parzen.binned", "scipy.optimize", "matplotlib", "torch", "dask")
    assert _loaded_after(code, heavy) == []


def test_prepare_loads_the_synopsis_a_query_reads_once():
    duckdb = pytest.importorskip("duckdb")
    from parzen.aqp import Engine, UnsupportedQuery

    con = duckdb.connect(":memory:", config={"enable_external_access": False})
    con.execute("CREATE TABLE t AS SELECT random() * 100 AS x, random() AS y FROM range(2000)")
    Engine(con).build("t", sample=500, grid=64)
    engine = Engine(con)
    assert engine.prepare("SELECT COUNT(*) FROM T WHERE x > 5") > 0  # names match in any case, as in queries
    assert engine.prepare("SELECT FLOOR(x / 10) AS bin, COUNT(*) FROM t GROUP BY bin") == 0.0
    assert engine.query("SELECT COUNT(*) FROM t WHERE x > 5").attrs["form"] == "grid"
    with pytest.raises(ValueError, match="no synopsis of table 'u'"):
        engine.prepare("SELECT COUNT(*) FROM u")
    with pytest.raises(UnsupportedQuery, match="MODE"):
        engine.prepare("SELECT MODE(x) FROM t")
