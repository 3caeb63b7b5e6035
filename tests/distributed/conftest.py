"""Dask clusters for the tests of parzen.distributed (the modules skip where Dask is missing)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def processes():
    """Two worker processes of one thread each (the 2-core CI machine), as a real deployment."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(processes=True, n_workers=2, threads_per_worker=1, dashboard_address=":0") as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def threads():
    """One in-process worker of two threads: for tests about logic, where processes only cost time."""
    from distributed import Client, LocalCluster

    with (
        LocalCluster(processes=False, n_workers=1, threads_per_worker=2, dashboard_address=":0") as cluster,
        Client(cluster, set_as_default=False) as client,
    ):
        yield client
