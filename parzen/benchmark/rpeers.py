"""R peers (``ks``, ``KernSmooth``) through ``Rscript``, timed inside R around the call only.

The data go to R in a temporary CSV; R applies the same first-call / median / budget rule as
:func:`parzen.benchmark.timing.measure` and prints the times and the value.  R's start-up and
the CSV are therefore not in the times.  Without ``Rscript`` or the ``ks`` package the R peers
are skipped with the reason.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .problems import Case
from .timing import Timing, first_call_suffices

_PROBE = (
    "suppressPackageStartupMessages(library(ks)); "
    "cat(paste(R.version$major, R.version$minor, sep = '.'), "
    "as.character(packageVersion('ks')), as.character(packageVersion('KernSmooth')))"
)

#: The timing loop of :func:`parzen.benchmark.timing.measure`, in R; EXPRESSION is the call on x.
_SCRIPT = """
args <- commandArgs(trailingOnly = TRUE)
x <- as.matrix(read.csv(args[1], header = FALSE))
if (ncol(x) == 1L) x <- x[, 1]
repeats <- as.integer(args[2])
budget <- as.numeric(args[3])  # negative: no budget
suppressPackageStartupMessages({library(ks); library(KernSmooth)})
call <- function() EXPRESSION
clock <- function() as.numeric(Sys.time())
start <- clock(); value <- call(); first <- clock() - start
samples <- numeric(0)
if (budget >= 0 && first > budget / 2) samples <- first else {
  spent <- first
  while (length(samples) < repeats && (length(samples) == 0L || budget < 0 || spent < budget)) {
    start <- clock(); value <- call(); took <- clock() - start
    samples <- c(samples, took); spent <- spent + took
  }
}
cat("first", format(first, digits = 17), "\\n")
cat("samples", format(samples, digits = 17), "\\n")
cat("value", format(as.vector(value), digits = 17), "\\n")
"""


@functools.cache
def _probe() -> tuple[str | None, dict]:
    """(why R peers cannot run or None, versions of R, ks and KernSmooth)."""
    if shutil.which("Rscript") is None:
        return "Rscript not found: install R and its ks package (e.g. apt-get install r-cran-ks)", {}
    try:
        done = subprocess.run(["Rscript", "-e", _PROBE], check=False, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return "Rscript did not answer within 120 s", {}
    if done.returncode != 0:
        return "the R package ks is not installed (apt-get install r-cran-ks, or install.packages('ks'))", {}
    r, ks, kernsmooth = done.stdout.split()
    return None, {"R": r, "ks": ks, "KernSmooth": kernsmooth}


def missing() -> str | None:
    """Why the R peers cannot run here.

    Returns
    -------
    str or None
        The reason (no Rscript, no ks, no answer), or None when they can run (probed once).
    """
    return _probe()[0]


def versions() -> dict:
    """The versions of R, ks and KernSmooth.

    Returns
    -------
    dict
        Name -> version; empty when the R peers cannot run.
    """
    return _probe()[1]


class RError(RuntimeError):
    """Rscript failed or timed out; the message says why."""


def timed(expression: str) -> Callable[[Case, int, float | None], Timing]:
    """An adapter running an R expression under R's copy of the timing loop.

    Parameters
    ----------
    expression : str
        R code using the data ``x`` (a vector for d = 1, else a matrix), e.g. ``ks::hpi(x)``.

    Returns
    -------
    callable
        (case, repeat, max_seconds) -> :class:`~parzen.benchmark.timing.Timing`, whose value is
        a float or a d x d matrix; it raises :class:`RError` when Rscript fails or times out.
    """
    script = _SCRIPT.replace("EXPRESSION", expression)

    def run(case: Case, repeat: int, max_seconds: float | None) -> Timing:
        with tempfile.TemporaryDirectory() as folder:
            data, code = Path(folder) / "x.csv", Path(folder) / "bench.R"
            np.savetxt(data, np.reshape(case.X, (case.n, -1)), delimiter=",", fmt="%.17g")
            code.write_text(script)
            budget = -1.0 if max_seconds is None else max_seconds
            limit = None if max_seconds is None else 4 * max_seconds + 60
            try:
                done = subprocess.run(
                    ["Rscript", str(code), str(data), str(repeat), str(budget)],
                    check=False, capture_output=True, text=True, timeout=limit,
                )
            except subprocess.TimeoutExpired:
                raise RError(f"timed out after {limit:.0f} s") from None
        if done.returncode != 0:
            raise RError(f"Rscript failed: {done.stderr.strip().splitlines()[-1:]}")
        fields = {line.split()[0]: [float(v) for v in line.split()[1:]] for line in done.stdout.splitlines() if line}
        first, values = fields["first"][0], np.array(fields["value"])
        value = float(values[0]) if values.size == 1 else values.reshape(case.d, case.d, order="F")
        return Timing(first, tuple(fields["samples"]), value, first_call_suffices(first, max_seconds))

    return run
