"""A cluster started as a real deployment would be: `dask scheduler` and `dask worker` processes
on localhost, reached by address; and a worker killed in the middle of a sum."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from functools import partial
from pathlib import Path

import numpy as np
import pytest

da = pytest.importorskip("dask.array")
from distributed import Client

import parzen
from parzen.backends.reference import NumpyBackend
from parzen.binned.grid import GridSpec
from parzen.binned.source import ArrayChunks, Moments, bin_chunk
from parzen.distributed import DaskBackend, DaskData

DASK = shutil.which("dask")
pytestmark = pytest.mark.skipif(DASK is None, reason="the dask command line is not installed")
STARTUP_S = 60
#: Workers see this checkout of parzen, as the test process does.
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(parzen.__file__).parents[1]), os.environ.get("PYTHONPATH")]))}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_worker(address: str) -> subprocess.Popen:
    """One `dask worker` process of one thread (no nanny: killing it kills the worker)."""
    command = [DASK, "worker", address, "--nworkers", "1", "--nthreads", "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"]
    return subprocess.Popen(command, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def cluster():
    """(address, worker processes): `dask scheduler` on a free port and two `dask worker`s."""
    address = f"tcp://127.0.0.1:{free_port()}"
    scheduler = subprocess.Popen(
        [DASK, "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1], "--dashboard-address", ":0"],
        env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    workers = [start_worker(address) for _ in range(2)]
    try:
        yield address, workers
    finally:
        for process in [*workers, scheduler]:
            stop(process)


@pytest.fixture
def client(cluster):
    address, _ = cluster
    with Client(address, timeout=STARTUP_S, set_as_default=False) as client:
        client.wait_for_workers(2, timeout=STARTUP_S)
        yield client


def test_binned_reduce_and_an_exact_pair_sum_on_a_command_line_cluster(client):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30_000, 2))
    data = DaskData(da.from_array(X, chunks=(4_000, 2)), client=client)
    spec = GridSpec(tuple(X.min(axis=0)), tuple(X.max(axis=0)), (51, 51))
    got, want = data.reduce(partial(bin_chunk, spec=spec)), ArrayChunks(X).reduce(partial(bin_chunk, spec=spec))
    np.testing.assert_allclose(got.counts, want.counts, rtol=1e-12, atol=1e-12 * want.counts.max())
    assert data.reduce(Moments.of).rows == 30_000
    x = X[:4_000, 0]
    be = DaskBackend(client, "cpu", min_block_rows=500)
    np.testing.assert_allclose(be.pair_sum_1d(x, "gauss_d4", [0.2, 0.7]), NumpyBackend().pair_sum_1d(x, "gauss_d4", [0.2, 0.7]), rtol=1e-12)


def test_a_worker_killed_during_a_pair_sum_costs_a_retry_not_the_answer(cluster, client, monkeypatch):
    """Dask reruns the victim's running tasks elsewhere; the blocks it held (scattered data have
    no lineage) are scattered again from this process and the sum rerun."""
    address, workers = cluster
    before = set(client.nthreads())
    victim = start_worker(address)
    workers.append(victim)  # stopped with the cluster whatever happens
    client.wait_for_workers(3, timeout=STARTUP_S)
    (victim_address,) = set(client.nthreads()) - before
    scatters = []
    scatter = client.scatter

    def counting_scatter(*args, **kwargs):
        scatters.append(kwargs.get("broadcast"))
        return scatter(*args, **kwargs)

    def kill_when_busy():
        deadline = time.monotonic() + STARTUP_S
        while not client.processing(workers=[victim_address]).get(victim_address) and time.monotonic() < deadline:
            time.sleep(0.01)
        victim.kill()

    monkeypatch.setattr(client, "scatter", counting_scatter)
    x = np.random.default_rng(5).normal(size=6_000)
    be = DaskBackend(client, "numpy", min_block_rows=200)  # 6 blocks over 3 workers, 21 tasks
    killer = threading.Thread(target=kill_when_busy)
    killer.start()
    got = be.pair_sum_1d(x, "gauss_d4", [0.3])
    killer.join()
    np.testing.assert_allclose(got, NumpyBackend().pair_sum_1d(x, "gauss_d4", [0.3]), rtol=1e-12)
    assert victim.poll() is not None and len(scatters) == 2  # killed, and the blocks were scattered again


def added_victim(cluster, client):
    """(a third worker's process, a function that kills it once it is busy with a task)."""
    address, workers = cluster
    before = set(client.nthreads())
    victim = start_worker(address)
    workers.append(victim)
    client.wait_for_workers(len(before) + 1, timeout=STARTUP_S)
    (victim_address,) = set(client.nthreads()) - before

    def kill_when_busy():
        deadline = time.monotonic() + STARTUP_S
        while not client.processing(workers=[victim_address]).get(victim_address) and time.monotonic() < deadline:
            time.sleep(0.01)
        victim.kill()

    return victim, kill_when_busy


def test_a_worker_killed_during_a_reduce_is_recomputed_by_dask(cluster, client):
    """Partitions come from a graph: Dask recomputes what a lost worker held."""
    victim, kill_when_busy = added_victim(cluster, client)
    X = np.random.default_rng(6).normal(size=(200_000, 2))
    data = DaskData(da.from_array(X, chunks=(5_000, 2)), client=client)
    spec = GridSpec(tuple(X.min(axis=0)), tuple(X.max(axis=0)), (201, 201))
    killer = threading.Thread(target=kill_when_busy)
    killer.start()
    got = data.reduce(partial(bin_chunk, spec=spec, backend="numpy"))
    killer.join()
    want = ArrayChunks(X).reduce(partial(bin_chunk, spec=spec))
    assert victim.poll() is not None
    np.testing.assert_allclose(got.counts, want.counts, rtol=1e-12, atol=1e-12 * want.counts.max())


def test_a_worker_killed_during_a_synopsis_build_changes_nothing_in_it(cluster, client):
    """Dask re-runs the lost worker's partitions: the build finishes with the synopsis an undisturbed
    build gives (same seed and partitions: the same bottom-k sample, the same totals and grids)."""
    dd = pytest.importorskip("dask.dataframe")
    import pandas as pd

    from parzen.aqp import Engine

    rng = np.random.default_rng(9)
    frame = pd.DataFrame({"x": rng.gamma(2.0, 3.0, 120_000), "k": rng.integers(0, 300, 120_000)})
    source = dd.from_pandas(frame, npartitions=24)
    want = Engine(":memory:").build("t", source=source, client=client, sample=5_000)
    victim, kill_when_busy = added_victim(cluster, client)
    killer = threading.Thread(target=kill_when_busy)
    killer.start()
    got = Engine(":memory:").build("t", source=source, client=client, sample=5_000)
    killer.join()
    assert victim.poll() is not None
    assert got.totals.keys() == want.totals.keys()
    for column in want.totals:
        assert got.totals[column][0] == want.totals[column][0]
        assert got.totals[column][1] == pytest.approx(want.totals[column][1], rel=1e-12)
        np.testing.assert_array_equal(got.sample[column], want.sample[column])
        np.testing.assert_array_equal(got.grids[column].count, want.grids[column].count)
