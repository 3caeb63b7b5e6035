"""The Dask client a computation runs on: the one passed, else the current one."""

from __future__ import annotations


def dask_client(client=None):
    """``client`` if given, else the current Dask client (:func:`distributed.default_client`).

    Parameters
    ----------
    client : distributed.Client, optional
        The client to use.

    Returns
    -------
    distributed.Client

    Raises
    ------
    ValueError
        When no client is given and none is running.
    """
    if client is not None:
        return client
    from distributed import default_client

    try:
        return default_client()
    except ValueError:
        raise ValueError(
            "no Dask client is running; start one: from distributed import Client, LocalCluster; "
            "client = Client(LocalCluster(n_workers=2, threads_per_worker=1)) "
            "(or Client('tcp://scheduler:8786') for a cluster), or pass client="
        ) from None
