"""Shared output of the benchmark scripts: JSON plus a markdown table in benchmarks/results/."""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def machine() -> dict:
    """What the figures were measured on."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def markdown_table(rows: list[dict], columns: list[str]) -> str:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(_fmt(row.get(c, "")) for c in columns) + " |")
    return "\n".join(lines)


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def write(name: str, rows: list[dict], columns: list[str], **meta) -> str:
    """Write results/<name>.json and results/<name>.md; return the markdown table."""
    RESULTS.mkdir(exist_ok=True)
    table = markdown_table(rows, columns)
    payload = {"machine": machine(), **meta, "rows": rows}
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2))
    header = f"# {name}\n\nMachine: {payload['machine']['platform']}, {payload['machine']['cpus']} CPUs\n\n"
    (RESULTS / f"{name}.md").write_text(header + table + "\n")
    return table
