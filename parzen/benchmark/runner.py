"""One benchmark run: every problem and size, timed for parzen and its peers, into rows.

For each case the float64 NumPy reference ("sequential") runs first, then the cpu backend in
each precision on one thread and on all of Numba's threads, then the peers.  Rows carry the
median, the first call, the ratios (speedup over the sequential reference, and over the fastest
peer computing the same quantity exactly) and the agreement with the exact value: the sequential
result, or the cpu backend's float64 one where the sequential run was skipped as too slow.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass

import numba
import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .peers import PEERS, Peer
from .problems import SIZES, Case, comparable, criterion_note, make_case, ours, relative_difference, titles
from .timing import Timing, measure, predicted_seconds

SEQUENTIAL = "parzen sequential"
CPU = "parzen cpu"
DTYPES = ("float64", "float32")


@dataclass(frozen=True)
class Contender:
    """One implementation in one configuration: parzen on a backend, or a peer.

    Parameters
    ----------
    name : str
        The implementation's name in the report.
    dtype : str
        The working precision.
    threads : int
        Numba's threads (1 for peers).
    backend : str, optional
        parzen's backend; None for a peer.
    peer : Peer, optional
        The peer; None for parzen.
    """

    name: str
    dtype: str
    threads: int
    backend: str | None = None  # parzen's backend; None for a peer
    peer: Peer | None = None


def contenders(problem: str, d: int, dtypes: Iterable[str], with_peers: bool) -> list[Contender]:
    """The implementations to time on one problem.

    Parameters
    ----------
    problem : str
        A problem title.
    d : int
        The dimension.
    dtypes : iterable of str
        The cpu backend's precisions.
    with_peers : bool
        Include the peers.

    Returns
    -------
    list of Contender
        parzen's sequential reference first, the cpu backend in each dtype on 1 and all Numba
        threads, then the peers that handle the problem in d dimensions.
    """
    every = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]  # numba.config sets it via globals()
    chosen = [Contender(SEQUENTIAL, "float64", 1, backend="numpy")]
    chosen += [Contender(CPU, dt, t, backend="cpu") for dt in dtypes for t in sorted({1, every})]
    if with_peers:
        chosen += [Contender(p.name, "float64", 1, peer=p) for p in PEERS if p.applies(problem, d)]
    return chosen


def plan(only: Iterable[str], scale: str) -> list[tuple[str, int, int]]:
    """The cases to run, in order.

    Parameters
    ----------
    only : iterable of str
        Problem keys.
    scale : str
        A key of :data:`~parzen.benchmark.problems.SIZES`.

    Returns
    -------
    list of tuple
        (problem title, n, d), by problem, then d, then n (so each size's time can be predicted
        from the one before it).
    """
    return [(title, n, d) for title in titles(only) for n, d in SIZES[scale][title]]


def run(
    only: Iterable[str],
    *,
    scale: str = "default",
    repeat: int = 3,
    max_seconds: float | None = 60.0,
    dtypes: Iterable[str] = DTYPES,
    with_peers: bool = True,
    console: Console | None = None,
) -> list[dict]:
    """Time every contender on every case.

    Parameters
    ----------
    only : iterable of str
        Problem keys.
    scale, repeat, max_seconds, dtypes, with_peers
        As :func:`parzen.benchmark.bench`.
    console : rich.console.Console, optional
        Shows progress and a line per measurement.

    Returns
    -------
    list of dict
        The report's rows: one per (case, contender), with its times, ratios, value, agreement
        and status ("ok", or why it was skipped or failed).
    """
    cases = plan(only, scale)
    dtypes = tuple(dtypes)
    total = sum(len(contenders(title, d, dtypes, with_peers)) for title, _, d in cases)
    last: dict[tuple, tuple[int, float]] = {}
    rows: list[dict] = []
    with _progress(console) as bar:
        task = bar.add_task("benchmark", total=total)
        for title, n, d in cases:
            case = make_case(title, n, d)
            measured = []
            for who in contenders(title, d, dtypes, with_peers):
                bar.update(task, description=f"{title} n={n} d={d}: {who.name} {who.dtype} x{who.threads}")
                row, timing = _measure(case, who, repeat, max_seconds, last)
                measured.append((who, row, timing))
                bar.advance(task)
                if console is not None:
                    bar.console.print(_line(row), highlight=False)
            rows += _finish(case, measured)
    return rows


@contextlib.contextmanager
def _progress(console: Console | None):
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, disable=console is None, transient=True) as bar:
        yield bar


def _measure(case: Case, who: Contender, repeat: int, max_seconds, last: dict) -> tuple[dict, Timing | None]:
    """One row (ratios and agreement still empty) and its timing; None when skipped."""
    row = {
        "problem": case.problem, "n": case.n, "d": case.d, "implementation": who.name, "dtype": who.dtype,
        "threads": who.threads, "exact": who.peer.exact if who.peer else True, "status": "ok", **dict.fromkeys(
            ("seconds", "first_call_s", "runs", "samples", "speedup", "vs_best_exact_peer", "value", "rel_diff")
        ), "note": "",
    }
    key = (case.problem, case.d, who)
    expected = predicted_seconds(last.get(key), case.n)
    if who.peer is not None and (reason := who.peer.missing()):
        return {**row, "status": f"skipped: {reason}"}, None
    if max_seconds is not None and expected is not None and expected > max_seconds:
        n_prev, took = last[key]
        return {**row, "status": f"skipped (too slow: {took:.3g} s at n={n_prev}, O(n^2) over --max-seconds)"}, None
    try:
        timing = _time(case, who, repeat, max_seconds)
    except Exception as exc:  # a peer's failure is a result; parzen's own are bugs (re-raised)
        if who.peer is None:
            raise
        return {**row, "status": f"failed: {type(exc).__name__}: {exc}"}, None
    last[key] = (case.n, timing.median)
    return {
        **row, "seconds": timing.median, "first_call_s": timing.first,
        "runs": len(timing.samples), "samples": list(timing.samples),
        "note": "; ".join(("first call only (over half the budget)",) * timing.first_only + timing.warnings),
    }, timing


def _time(case: Case, who: Contender, repeat: int, max_seconds) -> Timing:
    if who.peer is not None:
        return who.peer.run(case, repeat, max_seconds)
    if who.backend is None:
        raise ValueError(f"the contender {who.name!r} has neither a peer nor a parzen backend")
    every = numba.get_num_threads()
    numba.set_num_threads(who.threads)
    try:
        return measure(ours(case, who.backend, np.dtype(who.dtype)), repeat, max_seconds)
    finally:
        numba.set_num_threads(every)


def _finish(case: Case, measured: list[tuple[Contender, dict, Timing | None]]) -> list[dict]:
    """Fill in values, agreement and ratios once every contender of the case has run."""
    done = [(who, row, t) for who, row, t in measured if t is not None]
    ours_done = [(who, t) for who, _, t in done if who.peer is None]
    reference = next((t for who, t in ours_done if who.name == SEQUENTIAL), None)
    exact_source = reference or next((t for who, t in ours_done if who.dtype == "float64"), None)
    exact = None if exact_source is None else exact_source.value
    sequential = reference.median if reference else None
    exact_peers = [t.median for who, _, t in done if who.peer is not None and who.peer.exact]
    best_peer = min(exact_peers) if exact_peers else None
    for who, row, timing in done:
        value = timing.value if who.peer is not None else comparable(case, timing.value)
        row["value"] = None if case.problem == "KDE" and np.ndim(value) == 1 else _jsonable(value)  # densities
        row["speedup"] = sequential / timing.median if sequential else None
        row["vs_best_exact_peer"] = best_peer / timing.median if best_peer else None
        row["rel_diff"] = _agreement(case, who, value, exact)
        if who.peer is not None and case.problem.startswith("LSCV") and exact is not None:
            row["note"] = "; ".join(filter(None, [row["note"], criterion_note(case, value, exact)]))
    if reference is None and exact is not None:
        skipped = next(row for who, row, _ in measured if who.name == SEQUENTIAL)
        skipped["note"] = "rel. diffs of this case are against cpu float64"
    return [row for _, row, _ in measured]


def _agreement(case: Case, who: Contender, value, exact) -> float | None:
    if exact is None or (who.peer is not None and not who.peer.comparable):
        return None
    if who.peer is not None and who.peer.counterpart is not None:
        return relative_difference(case, value, who.peer.counterpart(case))
    return relative_difference(case, value, comparable(case, exact))


def _jsonable(value):
    return float(value) if np.ndim(value) == 0 else np.asarray(value, dtype=np.float64).tolist()


def _line(row: dict) -> str:
    """One finished measurement, for the log above the progress bar."""
    head = f"{row['problem']} n={row['n']} d={row['d']} {row['implementation']} {row['dtype']} x{row['threads']}"
    if row["status"] != "ok":
        return f"{head}: {row['status']}"
    return f"{head}: {row['seconds']:.4g} s (first call {row['first_call_s']:.3g} s, {row['runs']} runs)"
