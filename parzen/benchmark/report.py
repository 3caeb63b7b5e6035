"""The benchmark's outputs: JSON (every row and the machine), a markdown table per problem with
the ratios and notes, and PNG plots of speedup against n (as figures 8-10 of Andrzejewski et al.,
paper 000 in docs/statistics.md)."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
from pathlib import Path

import numba
import numpy as np

from .._extras import require

require("matplotlib", extra="plot", what="parzen.benchmark (its plots)")

from matplotlib.figure import Figure

from . import rpeers
from .peers import PEERS, PROBLEM_NOTES
from .problems import DENSITY_FLOOR, LSCV_H_OBJECTIVE
from .runner import CPU, DTYPES

#: Libraries whose versions the JSON records.
LIBRARIES = ("parzen", "numpy", "scipy", "numba", "llvmlite", "scikit-learn", "statsmodels", "KDEpy", "matplotlib")
#: CPU flags that tell the SIMD width.
SIMD_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f")
#: (row key, markdown heading) of the tables.
COLUMNS = (
    ("n", "n"), ("d", "d"), ("implementation", "implementation"), ("dtype", "dtype"), ("threads", "threads"),
    ("seconds", "median s"), ("first_call_s", "first call s"), ("runs", "runs"),
    ("speedup", "speedup vs sequential"), ("vs_best_exact_peer", "vs best exact peer"),
    ("value", "value"), ("rel_diff", "rel. diff"), ("note", "note"),
)
#: Problems drawn as speedup-versus-n plots, and their file suffixes.
PLOTS = {"PLUGIN": "plugin", "LSCV_h": "lscv_h", LSCV_H_OBJECTIVE: "lscv_H_objective"}

READING = f"""Times are wall-clock medians of `runs` calls made after a first call; the first call (which
includes Numba's JIT compilation or the loading of its cache) is shown on its own.  *speedup vs
sequential* = the float64 NumPy reference's median / this median; *vs best exact peer* = the median of
the fastest peer computing the same quantity without binning / this median (> 1: this is faster).
*rel. diff* is against the exact value (the sequential result): |a - b| / |b| for bandwidths (norms
for vectors and matrices), for KDE the largest pointwise relative difference where the density is at
least {DENSITY_FLOOR:g} of its maximum.  LSCV_h values are per-column bandwidths h * sd_k (H = h^2 Sigma);
LSCV_H values show diag(H).  Peers run on one thread."""


def machine() -> dict:
    """The machine and software the figures were measured with.

    Returns
    -------
    dict
        CPU model, logical and usable CPUs, SIMD flags, LLVM's CPU name, Numba's threads and
        threading layer, platform, Python and the versions of :data:`LIBRARIES` (and R's).
    """
    cpuinfo = _cpuinfo()
    layer: str
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel function has run yet
        layer = "not started"
    return {
        "cpu": cpuinfo.get("model name") or platform.processor() or platform.machine(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "simd_flags": [f for f in SIMD_FLAGS if f in cpuinfo.get("flags", "").split()],
        "llvm_cpu": numba.config.CPU_NAME or _host_cpu(),  # type: ignore[attr-defined]  # set via globals()
        "numba_threads": numba.config.NUMBA_NUM_THREADS,  # type: ignore[attr-defined]  # set via globals()
        "numba_threading_layer": layer,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "versions": {**{lib: _version(lib) for lib in LIBRARIES}, **rpeers.versions()},
    }


def _cpuinfo() -> dict:
    """The first processor's fields of /proc/cpuinfo (empty elsewhere)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    fields = {}
    for line in text.split("\n\n")[0].splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    return fields


def _host_cpu() -> str:
    import llvmlite.binding

    return llvmlite.binding.get_host_cpu_name()


def _version(library: str) -> str | None:
    try:
        return importlib.metadata.version(library)
    except importlib.metadata.PackageNotFoundError:
        return None


def write(rows: list[dict], meta: dict, output_dir: Path, name: str) -> list[Path]:
    """Write <name>.json, <name>.md and <name>_<problem>.png into ``output_dir``.

    Parameters
    ----------
    rows : list of dict
        The measurements.
    meta : dict
        The run's settings, recorded in both files.
    output_dir : pathlib.Path
        Created if missing.
    name : str
        The files' stem.

    Returns
    -------
    list of pathlib.Path
        The paths written.
    """
    output_dir.mkdir(parents=True, exist_ok=True)
    info = machine()
    json_path, md_path = output_dir / f"{name}.json", output_dir / f"{name}.md"
    json_path.write_text(json.dumps({"machine": info, **meta, "rows": rows}, indent=2))
    md_path.write_text(markdown(rows, info, meta, name))
    return [json_path, md_path, *plot_speedups(rows, output_dir, name)]


def markdown(rows: list[dict], info: dict, meta: dict, name: str) -> str:
    """The markdown report: machine and settings, how to read it, then a table and notes per problem.

    Parameters
    ----------
    rows : list of dict
        The measurements.
    info : dict
        :func:`machine`'s answer.
    meta : dict
        The run's settings.
    name : str
        The report's title.

    Returns
    -------
    str
    """
    versions = ", ".join(f"{k} {v}" for k, v in info["versions"].items() if v)
    parts = [
        f"# {name}\n",
        (
            f"Machine: {info['cpu']}, {info['usable_cpus']} usable CPUs, SIMD {'/'.join(info['simd_flags']) or '?'}, "
            f"Numba {info['numba_threads']} threads ({info['numba_threading_layer']} layer); {info['platform']}.\n"
        ),
        f"Software: Python {info['python']}, {versions}.\n",
        "Run: " + ", ".join(f"{k} {v}" for k, v in meta.items()) + ".\n",
        READING + "\n",
    ]
    for problem in dict.fromkeys(row["problem"] for row in rows):
        chosen = [row for row in rows if row["problem"] == problem]
        parts.append(f"## {problem}\n")
        parts.append(markdown_table(chosen))
        notes = [PROBLEM_NOTES[problem]] if problem in PROBLEM_NOTES else []
        shown = {row["implementation"] for row in chosen}
        notes += [
            f"{p.name} ({'exact' if p.exact else 'approximate'}): {p.caveat}."
            for p in PEERS if p.problem == problem and p.name in shown
        ]
        parts.append("\n".join(f"- {note}" for note in notes) + "\n" if notes else "")
    return "\n".join(parts)


def markdown_table(rows: list[dict]) -> str:
    """One problem's rows as a markdown table with the columns of :data:`COLUMNS`.

    Parameters
    ----------
    rows : list of dict
        The measurements of one problem.

    Returns
    -------
    str
    """
    lines = ["| " + " | ".join(head for _, head in COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for row in rows:
        cells = [_cell(row, key) for key, _ in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _cell(row: dict, key: str) -> str:
    if key == "note":
        return "; ".join(filter(None, [row["status"] if row["status"] != "ok" else "", row.get("note", "")]))
    return show(row.get(key))


def show(value) -> str:
    """A value as a table cell.

    Parameters
    ----------
    value : None, bool, int, str or array_like
        A row's entry.

    Returns
    -------
    str
        "—" for None; numbers to 4 significant digits, a vector's first 4 entries, a matrix's
        diagonal.
    """
    if value is None:
        return "—"
    if isinstance(value, bool | int | str):
        return str(value)
    array = np.asarray(value, dtype=np.float64)
    if array.size == 1:
        return f"{float(array.flat[0]):.4g}"
    if array.ndim == 2:
        return "diag " + show(np.diag(array))
    entries = [f"{v:.4g}" for v in array[:4]]
    return "[" + ", ".join(entries) + (", …" if array.size > 4 else "") + "]"


def plot_speedups(rows: list[dict], output_dir: Path, name: str) -> list[Path]:
    """Plot the speedup over the sequential reference against n.

    One panel per cpu configuration (dtype, threads) and one line per d, as figures 8-10 of
    paper 000 (docs/statistics.md).

    Parameters
    ----------
    rows : list of dict
        The measurements.
    output_dir : pathlib.Path
        Where the PNG files go.
    name : str
        The files' stem.

    Returns
    -------
    list of pathlib.Path
        One PNG per problem that has speedups.
    """
    paths = []
    for problem, suffix in PLOTS.items():
        chosen = [r for r in rows if r["problem"] == problem and r.get("speedup") and r["implementation"] == CPU]
        configs = sorted({(r["dtype"], r["threads"]) for r in chosen}, key=lambda c: (DTYPES.index(c[0]), c[1]))
        if not configs:
            continue
        fig = Figure(figsize=(4 * len(configs), 3.6), layout="constrained")
        axes = fig.subplots(1, len(configs), sharey=True, squeeze=False)[0]
        for ax, (dtype, threads) in zip(axes, configs):
            these = [r for r in chosen if (r["dtype"], r["threads"]) == (dtype, threads)]
            for d in sorted({r["d"] for r in these}):
                line = sorted((r["n"], r["speedup"]) for r in these if r["d"] == d)
                ax.plot(*zip(*line), marker="o", label=f"d = {d}")
            ax.set_xscale("log", base=2)
            ax.set_title(f"{dtype}, {threads} thread{'s' * (threads > 1)}")
            ax.set_xlabel("n")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize="small")
        axes[0].set_ylabel("speedup vs sequential")
        fig.suptitle(f"{problem}: parzen cpu backend over the float64 NumPy reference")
        path = output_dir / f"{name}_{suffix}.png"
        fig.savefig(path, dpi=110)
        paths.append(path)
    return paths
