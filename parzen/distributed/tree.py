"""Adding up results held on the workers by a tree of tasks (fan-in ``FAN_IN``).

Each level adds groups of up to ``FAN_IN`` partial results in one task on a worker; only the
root comes back to the caller.  The order of the additions is fixed by the order of the parts,
so a sum is reproducible run to run.
"""

from __future__ import annotations

from functools import reduce
from operator import add

#: Partial results added per task.
FAN_IN = 8


def add_all(*parts):
    """``parts[0] + parts[1] + ...`` (left to right): one node of the tree.

    Parameters
    ----------
    *parts
        Summaries that add with ``+`` (at least one).

    Returns
    -------
    Their sum.
    """
    return reduce(add, parts)


def tree_sum(client, parts: list, *, fan_in: int = FAN_IN):
    """The sum of ``parts`` (futures or values) as one future, added on the workers.

    Parameters
    ----------
    client : distributed.Client
        Where the additions run.
    parts : list
        Futures of summaries (at least one).
    fan_in : int, default FAN_IN
        Parts added per task (at least 2).

    Returns
    -------
    distributed.Future
        The sum (``parts[0]`` itself when there is one part and it is a future).

    Raises
    ------
    ValueError
        For no parts, or ``fan_in`` below 2.
    """
    if not parts:
        raise ValueError("nothing to add: the data have no partitions")
    if fan_in < 2:
        raise ValueError(f"fan_in must be at least 2, got {fan_in!r}")
    level = list(parts)
    while len(level) > 1:
        level = [client.submit(add_all, *level[k : k + fan_in], pure=False) for k in range(0, len(level), fan_in)]
    return level[0]
