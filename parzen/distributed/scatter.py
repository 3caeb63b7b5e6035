"""Data blocks scattered to the workers once and reused by many tasks, sent again if lost.

Scattered data have no lineage: when a worker holding a block dies, Dask cannot recompute it,
and the tasks that need it are cancelled ("lost dependencies").  :class:`ScatteredBlocks` keeps
the blocks on this side (views of the caller's array, no copy), scatters them again and reruns
the whole set of tasks, up to :data:`RETRIES` times, so that a lost worker costs time but not
the answer; after that it raises a :class:`RuntimeError` that says what happened.
"""

from __future__ import annotations

from collections.abc import Callable

#: Times a set of tasks is rerun after losing scattered blocks with a worker.
RETRIES = 2


class ScatteredBlocks:
    """Blocks scattered to the workers of ``client`` (``broadcast=False``: one copy each).

    Parameters
    ----------
    client : distributed.Client
        The client.
    blocks : list
        The blocks (arrays, or tuples of arrays), kept here to scatter again.
    """

    def __init__(self, client, blocks: list) -> None:
        self.client = client
        self.blocks = blocks
        self.futures = client.scatter(blocks, broadcast=False, hash=False)

    def gather(self, submit: Callable[[list], list]) -> list:
        """The results of the tasks ``submit(futures)`` makes on the scattered blocks.

        Parameters
        ----------
        submit : callable
            futures of the blocks -> list of futures of tasks that use them.

        Returns
        -------
        list
            The tasks' results, in order.

        Raises
        ------
        RuntimeError
            When workers holding the blocks were lost more than :data:`RETRIES` times.
        Exception
            Whatever a task raises (a bad kind, a bad kernel), as Dask re-raises it.
        """
        from distributed.client import FutureCancelledError

        for attempt in range(RETRIES + 1):
            try:
                return self.client.gather(submit(self.futures))
            except FutureCancelledError as error:
                if attempt == RETRIES:
                    raise RuntimeError(
                        f"Dask workers holding the data were lost {RETRIES + 1} times during one sum "
                        f"({error}); check the workers' logs (memory limits, pre-emption) and run again"
                    ) from error
                self.futures = self.client.scatter(self.blocks, broadcast=False, hash=False)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises
