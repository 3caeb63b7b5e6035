"""benchmarks/multi_gpu.py (issue 21's scaling script) on CPU workers: it runs with 1 and 2 workers
and every count gives the one-worker answer (the per-worker shares add up to the same sums)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("distributed")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "multi_gpu.py"


def _script():
    spec = importlib.util.spec_from_file_location("multi_gpu", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_scaling_script_gives_the_one_worker_answer_on_every_count(tmp_path):
    _script().main(["--local", "cpu", "--gpus", "1", "2", "--sections", "plugin", "kde", "--plugin-n", "4000",
                    "--kde-n", "3000", "--output-dir", str(tmp_path)])
    for section in ("plugin", "kde"):
        rows = json.loads((tmp_path / f"multi_gpu_{section}.json").read_text())["rows"]
        assert [row["gpus"] for row in rows] == [1, 2]
        assert rows[1]["rel_diff_vs_first"] <= 1e-5  # float32 sums, split differently
        assert rows[0]["speedup_vs_one"] == 1.0 and rows[1]["seconds"] > 0
        assert (tmp_path / f"multi_gpu_{section}.md").read_text().count("\n| ") == 4  # header, rule, 2 rows
    plugin = json.loads((tmp_path / "multi_gpu_plugin.json").read_text())
    assert plugin["rows"][0]["answer"] > 0 and "--plugin-n 4000" in plugin["command"]
