"""``benchmarks/aqp_workloads.py --reuse --rebuild-tables``: a stored synopsis built with other exact tables
keeps its sample and has only its tables rebuilt to the listed ones (:meth:`parzen.aqp.Engine.rebuild_tables`),
and ``--reuse`` then accepts it as the listed build."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np

from parzen.aqp import Engine

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_reuse_rebuilds_only_the_tables_of_a_stored_synopsis(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import aqp_workloads

    database = tmp_path / "facts_sf1.duckdb"
    con = duckdb.connect(str(database))
    con.execute("CREATE TABLE facts AS SELECT i % 3 AS f_kind, DATE '2020-01-01' + (i % 97)::INTEGER AS f_ship, "
                "DATE '2020-01-01' + (i % 89)::INTEGER AS f_due, (i % 50)::DOUBLE AS f_amount FROM range(20000) r(i)")
    engine = Engine(con)
    options = {"columns": ["f_ship", "f_due", "f_amount"], "cube": [["f_kind"]]}
    built = engine.build("facts", sample=2000, seed=1, grid=0, **options)
    aqp_workloads._build_log(database, "facts").write_text(json.dumps(
        {"seconds": 1.0, "bytes": 1, "rows": built.row_count, "columns": list(built.models), "options": options,
         "joins": None, "joins_note": ""}))
    listed = {**options, "cube": [["f_kind", "cmp(f_ship,f_due)"]]}
    assert aqp_workloads._reused(engine, database, "facts", listed, None) is None  # other tables: not reused as is
    record = aqp_workloads._reused(engine, database, "facts", listed, None, rebuild_tables=True)
    assert record["cube_tables"] == [["f_kind", "cmp(f_ship,f_due)"]] and record["tables_rebuilt_seconds"] > 0
    assert record["options"] == listed and record["seconds"] == 1.0
    np.testing.assert_array_equal(engine.synopsis("facts").sample["f_amount"], built.sample["f_amount"])
    again = aqp_workloads._reused(Engine(con), database, "facts", listed, None)  # the rebuilt tables are the listed
    assert again is not None and again["cube_tables"] == record["cube_tables"]
    assert aqp_workloads._reused(Engine(con), database, "facts", {**listed, "columns": ["f_amount"]}, None,
                                 rebuild_tables=True) is None  # other options than the tables: built anew
