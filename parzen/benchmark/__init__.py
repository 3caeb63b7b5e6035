"""The benchmark harness of ``parzen bench``: parzen's sequential reference and cpu backend
against the libraries a user would otherwise call, on the problems of section 7.2 of
Andrzejewski et al. (paper 000 in docs/statistics.md).

- :mod:`.problems`: sizes, seeded data, parzen's calls, agreement;
- :mod:`.peers`, :mod:`.rpeers`: one adapter per peer (Python libraries; R through Rscript);
- :mod:`.timing`: first call, median of repeats, time budget;
- :mod:`.runner`: the measurements and their ratios;
- :mod:`.report`: JSON, markdown and PNG.

The plots need matplotlib (the ``plot`` extra), the peers the ``bench`` extra (a missing peer is
skipped with the reason).
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
    """A finished run.

    Parameters
    ----------
    rows : list of dict
        One row per measurement, as in the JSON file.
    files : list of pathlib.Path
        The files written: JSON, markdown, one PNG per problem with speedups.
    """

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
    """Time parzen and its peers on the benchmark problems and write the report.

    Parameters
    ----------
    only : iterable of str, default all
        Problem keys of :data:`PROBLEMS`: plugin, lscv_h, lscv_H (the objective and the
        selection), kde.
    scale : str, default "default"
        A key of :data:`SIZES`: "tiny" (tests), "default" (minutes on 2 cores), "full" (the
        paper's sizes, hours).
    repeat : int, default 3
        Timed calls after the first; their median is reported.
    max_seconds : float or None, default 60.0
        Each measurement's time budget (:func:`parzen.benchmark.timing.measure`); None: none.
    output_dir : pathlib.Path, default benchmarks/results
        Where ``name``.json, ``name``.md and ``name``_<problem>.png go.
    with_peers : bool, default True
        Also time SciPy, scikit-learn, statsmodels, KDEpy and R's ks / KernSmooth where installed.
    dtypes : iterable of str, default ("float64", "float32")
        The cpu backend's precisions.
    name : str, default "cpu_backend"
        The files' stem.
    console : rich.console.Console, optional
        Shows progress and a line per measurement.

    Returns
    -------
    Benchmark
        The rows and the files written.

    Raises
    ------
    ValueError
        For an unknown problem or scale, or ``repeat`` < 1.
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
