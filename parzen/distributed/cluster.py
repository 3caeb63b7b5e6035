"""Connecting to a Dask cluster by address, or starting one on this machine, for the command line.

``parzen bandwidth --scheduler ADDRESS`` runs its selector on the cluster whose scheduler listens
at ADDRESS (``tcp://host:8786``); ``--scheduler local`` starts a :class:`distributed.LocalCluster`
of worker processes sized to this machine (workers x threads = cores, Dask's own split) and closes
it afterwards.  See docs/distributed.md, "From the command line".
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

#: The --scheduler value that starts a LocalCluster on this machine.
LOCAL = "local"
#: Seconds to wait for the scheduler to answer, and for it to have a worker.
CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Connection:
    """A connected Dask client and, in words, where its work runs.

    Parameters
    ----------
    client : distributed.Client
        The client (closed when the :func:`connect` block ends).
    where : str
        E.g. ``"Dask cluster tcp://10.0.0.5:8786, 2 workers, 32 threads"``.
    """

    client: Any  # distributed.Client (an optional package: not imported for the annotation)
    where: str


@contextlib.contextmanager
def connect(scheduler: str, *, timeout: float | None = None) -> Iterator[Connection]:
    """A client of the Dask scheduler at ``scheduler``, or of a LocalCluster started for the block.

    Parameters
    ----------
    scheduler : str
        The scheduler's address (``tcp://host:8786``, or ``host:8786``), or ``"local"``: a
        ``LocalCluster(processes=True)`` with Dask's default split of this machine's cores into
        worker processes and threads (workers x threads = cores), closed when the block ends.
    timeout : float, optional
        Seconds (default :data:`CONNECT_TIMEOUT_S`) to wait for the scheduler to answer and to have at least one worker.

    Yields
    ------
    Connection
        The client and a description of the cluster (address, workers, threads).

    Raises
    ------
    ValueError
        For a malformed address (Dask's message, with the address).
    OSError
        When the scheduler does not answer within ``timeout`` seconds, or has no worker by then;
        the message names the address and how to start a scheduler or workers.
    """
    from distributed import Client, LocalCluster

    timeout = CONNECT_TIMEOUT_S if timeout is None else timeout
    with contextlib.ExitStack() as stack:
        if scheduler == LOCAL:
            cluster = stack.enter_context(LocalCluster(processes=True, dashboard_address=None))
            client = stack.enter_context(Client(cluster, set_as_default=False))
            label = f"LocalCluster {cluster.scheduler_address} (started for this run)"
        else:
            try:
                client = stack.enter_context(Client(scheduler, timeout=timeout, set_as_default=False))
            except ValueError as exc:
                raise ValueError(f"--scheduler {scheduler!r} is not a Dask scheduler address ({exc}); "
                                 "give tcp://HOST:PORT, or 'local' for a cluster on this machine") from None
            except OSError as exc:
                raise OSError(f"cannot reach the Dask scheduler at {scheduler} within {timeout:g} s ({exc}); "
                              "is `dask scheduler` running there, and its port open to this machine?") from None
            label = f"Dask cluster {scheduler}"
            try:
                client.wait_for_workers(1, timeout=timeout)
            except TimeoutError:
                raise OSError(f"the Dask scheduler at {scheduler} has no worker after {timeout:g} s; "
                              f"start some: dask worker {scheduler}") from None
        yield Connection(client, f"{label}, {workers_and_threads(client)}")


def workers_and_threads(client) -> str:
    """``"2 workers x 1 thread"`` when every worker has the same threads, else ``"3 workers, 10 threads"``.

    Parameters
    ----------
    client : distributed.Client

    Returns
    -------
    str
    """
    threads = list(client.nthreads().values())
    workers = f"{len(threads)} worker{'s' * (len(threads) != 1)}"
    if len(set(threads)) == 1:
        return f"{workers} x {threads[0]} thread{'s' * (threads[0] != 1)}"
    return f"{workers}, {sum(threads)} threads"
