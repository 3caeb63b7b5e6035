"""What the latency benchmarks (aqp_latency.py, aqp_latency_sf10.py) share: two checkouts of parzen
timed back to back, each in its own process of the calling script, alternating."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_checkout(script: str, path: str, listing_file: Path, repeats: int) -> dict:
    """``script --measure listing_file --repeats repeats`` in a process that imports the ``parzen``
    package of the directory ``path`` (and these scripts' modules); the JSON it prints last."""
    env = {**os.environ, "PYTHONPATH": f"{Path(path).resolve()}{os.pathsep}{HERE}"}
    done = subprocess.run([sys.executable, script, "--measure", str(listing_file), "--repeats", str(repeats)],
                          env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.splitlines()[-1])


def alternated(script: str, listing: list, listing_file: Path, checkouts: dict[str, str], rounds: int,
               repeats: int) -> dict[str, list[dict]]:
    """Per checkout (name -> directory), its :func:`run_checkout` measurements of ``listing`` (written to
    ``listing_file`` for the runs, removed after), the checkouts taking turns ``rounds`` times."""
    listing_file.write_text(json.dumps(listing))
    try:
        runs: dict[str, list[dict]] = {name: [] for name in checkouts}
        for _ in range(rounds):
            for name, path in checkouts.items():
                runs[name].append(run_checkout(script, path, listing_file, repeats))
    finally:
        listing_file.unlink()
    return runs
