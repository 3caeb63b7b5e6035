"""Progress reporting for long computations (rich progress bars, off by default).

Library functions take ``progress=False``; the CLI turns it on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


class _Silent:
    """The progress object when progress is off."""

    def advance(self, steps: float = 1.0, **fields) -> None:
        """Progress off: nothing to show."""


class _Bar:
    """One task of a rich ``Progress``."""

    def __init__(self, bar, task) -> None:
        self._bar, self._task = bar, task

    def advance(self, steps: float = 1.0, **fields) -> None:
        """Advance the bar by ``steps`` and set its ``fields`` (e.g. ``status``)."""
        self._bar.update(self._task, advance=steps, **fields)


@contextlib.contextmanager
def progress_bar(enabled: bool, description: str, total: float | None = None) -> Iterator[_Silent | _Bar]:
    """A context giving an object with ``.advance(steps, **fields)``; a rich bar when ``enabled``.

    Parameters
    ----------
    enabled : bool
        False: a silent object (no output, no rich import).
    description : str
        The bar's label, printed as plain text (it may hold a table's name).
    total : float, optional
        The number of steps; ``None`` shows a spinner with a step counter and a status field
        (for optimisers whose number of steps is not known in advance).

    Yields
    ------
    object
        With ``advance(steps=1.0, **fields)``; the bar disappears when the context ends.
    """
    if not enabled:
        yield _Silent()
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = [SpinnerColumn(), TextColumn("{task.description}", markup=False)]  # may hold a table's name
    if total is None:
        columns += [TextColumn("{task.completed:.0f} steps"), TextColumn("{task.fields[status]}", markup=False)]
    else:
        columns += [BarColumn(), MofNCompleteColumn()]
    columns.append(TimeElapsedColumn())
    with Progress(*columns, transient=True) as bar:
        task = bar.add_task(description, total=total, status="")
        yield _Bar(bar, task)
