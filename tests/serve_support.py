"""Shared by the ``parzen serve`` tests: a small database with a synopsis, and a real server on it."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from parzen.aqp import Engine

REPO = Path(__file__).resolve().parent.parent


def make_database(path: Path, rows: int) -> Path:
    """A DuckDB file with table t (x gamma, y normal, k integer, g in a/b/c) and its synopsis."""
    rng = np.random.default_rng(7)
    frame = pd.DataFrame({"x": rng.gamma(2.0, 10.0, rows), "y": rng.normal(0.0, 1.0, rows),
                          "k": rng.integers(0, 40, rows), "g": rng.choice(["a", "b", "c"], rows)})
    with duckdb.connect(str(path)) as con:
        con.register("frame", frame)
        con.execute("CREATE TABLE t AS SELECT * FROM frame")
        con.unregister("frame")
    engine = Engine(path)
    engine.build("t", ["x", "y", "k"], group_by=["g"], sample=8_000, grid=512)
    engine.con.close()
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(database: Path, *options: str, ready_seconds: float = 120.0):
    """``parzen serve DATABASE`` in a process of its own (uvicorn), its base URL while it runs."""
    import httpx

    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    url = f"http://127.0.0.1:{port}"
    # uvicorn logs every request: to a file, as a pipe nobody reads would fill and block the server
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            [sys.executable, "-c", "from parzen.cli import app; app()", "serve", str(database), "--port", str(port),
             *options], env=env, stdout=subprocess.DEVNULL, stderr=log)
        try:
            deadline = time.monotonic() + ready_seconds
            while True:
                if process.poll() is not None:
                    log.seek(0)
                    raise RuntimeError(f"parzen serve exited: {log.read().decode()[-2000:]}")
                try:
                    if httpx.get(url + "/tables", timeout=5).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"parzen serve did not answer within {ready_seconds} s")
                time.sleep(0.2)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
