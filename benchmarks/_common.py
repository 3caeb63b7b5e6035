"""What the benchmark scripts share: the machine they ran on, in words; R scripts run on a data set
(the comparisons with R packages); the results written as JSON and markdown."""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np


def machine() -> str:
    """``"<CPU model>, <n> logical cores, <OS>"``, the model from /proc/cpuinfo where there is one."""
    model = platform.processor() or "cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} logical cores, {platform.system()}"


def host_steadiness(repeats: int = 300) -> dict:
    """How steady this machine's CPU is now: a fixed pure-Python loop (20000 additions of squares),
    timed ``repeats`` times; ``{"median ms", "best ms", "ratio"}``.  On a quiet, steady host the ratio
    is near 1; on a shared virtual machine it reaches 1.5 or more, and every latency measured in the
    same period is inflated over its best-of by about as much."""

    def loop() -> int:
        total = 0
        for i in range(20000):
            total += i * i
        return total

    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        loop()
        seconds.append(time.perf_counter() - started)
    median, best = statistics.median(seconds), min(seconds)
    return {"median ms": 1e3 * median, "best ms": 1e3 * best, "ratio": median / best}


def run_rscript(script: str, data: np.ndarray, *args: object) -> list[float] | str:
    """Run the R ``script`` on ``data``: the rows written as little-endian float64 (row-major) to a
    temporary file, whose path is the script's first argument and ``args`` the following ones; the
    numbers the script prints, or why there are none ("Rscript not found", "Rscript failed: ...")."""
    if shutil.which("Rscript") is None:
        return "Rscript not found"
    with tempfile.TemporaryDirectory() as tmp:
        data_file, script_file = Path(tmp) / "x.bin", Path(tmp) / "script.R"
        np.ascontiguousarray(data, dtype="<f8").tofile(data_file)
        script_file.write_text(script)
        done = subprocess.run(["Rscript", str(script_file), str(data_file), *map(str, args)], capture_output=True,
                              text=True, check=False)
    if done.returncode != 0:
        return f"Rscript failed: {done.stderr.strip()[-200:]}"
    return [float(v) for v in done.stdout.split()]


def r_package_version(package: str) -> str:
    """The installed version of the R ``package`` ("?" where R or the package is missing)."""
    if shutil.which("Rscript") is None:
        return "?"
    done = subprocess.run(["Rscript", "-e", f"cat(as.character(packageVersion('{package}')))"], capture_output=True,
                          text=True, check=False)
    return done.stdout.strip() or "?"


def write_results(output_dir: Path, name: str, payload: dict, text: str, *, indent: int = 2, default=None) -> None:
    """``name``.json (``payload``, indented by ``indent``; ``default``: :func:`json.dumps`'s, for values
    JSON does not hold) and ``name``.md (``text``) in ``output_dir``, made if missing."""
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / f"{name}.json").write_text(json.dumps(payload, indent=indent, default=default) + "\n")
    (output_dir / f"{name}.md").write_text(text)
