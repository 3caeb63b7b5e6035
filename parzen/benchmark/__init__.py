"""The benchmark harness of ``parzen bench``: parzen's sequential reference and cpu backend
against the libraries a user would otherwise call, on paper 000's problems (section 7.2).

- :mod:`.problems`: sizes, seeded data, parzen's calls, agreement;
- :mod:`.peers`, :mod:`.rpeers`: one adapter per peer (Python libraries; R through Rscript);
- :mod:`.timing`: first call, median of repeats, time budget;
- :mod:`.runner`: the measurements and their ratios;
- :mod:`.report`: JSON, markdown and PNG.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console

from .._validate import choose
from . import report
from .problems import PROBLEMS, SIZES
from .runner import DTYPES, run

#: Where ``parzen bench`` writes by default (relative to the working directory).
RESULTS = Path("benchmarks") / "results"


@dataclass(frozen=True)
class Benchmark:
    """A finished run: its rows (as in the JSON) and the files written."""

    rows: list[dict]
    files: list[Path]


def bench(
    only: Iterable[str] = tuple(PROBLEMS),
    *,
    scale: str = "default",
    repeat: int = 3,
    max_seconds: float | None = 60.0,
    output_dir: Path = RESULTS,
    with_peers: bool = True,
    dtypes: Iterable[str] = DTYPES,
    name: str = "cpu_backend",
    console: Console | None = None,
) -> Benchmark:
    """Run the problems ``only`` (keys of :data:`PROBLEMS`) at the sizes of ``scale`` (a key of
    :data:`SIZES`) and write ``output_dir``/``name``.{json,md} and the speedup plots.

    ``max_seconds`` is each measurement's time budget (None: no budget); ``console`` shows
    progress and a line per measurement.
    """
    only = tuple(choose(key, PROBLEMS, what="problem") for key in only)
    choose(scale, SIZES, what="scale")
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    started, clock = datetime.now(UTC), time.perf_counter()
    rows = run(only, scale=scale, repeat=repeat, max_seconds=max_seconds, dtypes=dtypes,
               with_peers=with_peers, console=console)
    meta = {
        "problems": list(only), "scale": scale, "repeat": repeat, "max_seconds": max_seconds,
        "started": started.isoformat(timespec="seconds"), "wall_seconds": round(time.perf_counter() - clock, 1),
    }
    return Benchmark(rows, report.write(rows, meta, Path(output_dir), name))


__all__ = ["PROBLEMS", "RESULTS", "SIZES", "Benchmark", "bench"]
