"""Real data sets bundled with parzen, and R's bandwidths for them.

>>> from parzen.datasets import load
>>> load("faithful").columns.tolist()
['eruptions', 'waiting']
"""

from __future__ import annotations

import json
from importlib import resources

import pandas as pd

from .._validate import choose

#: Name -> one-line description of each bundled data set.
DESCRIPTIONS = {
    "faithful": "Old Faithful geyser: eruption time and waiting time, minutes (R datasets::faithful)",
    "quakes": "Fiji earthquakes: location, depth, magnitude; rounded values with ties (R datasets::quakes)",
    "tempb": "daily minimum and maximum temperatures (R ks::tempb)",
}
NAMES = tuple(DESCRIPTIONS)


def load(name: str) -> pd.DataFrame:
    """A bundled data set.

    Parameters
    ----------
    name : str
        One of :data:`NAMES`: faithful, quakes, tempb (see :data:`DESCRIPTIONS`).

    Returns
    -------
    pandas.DataFrame
        A new copy, read from the CSV file shipped with parzen.

    Raises
    ------
    ValueError
        For another name; the message lists the valid ones.
    """
    choose(name, NAMES, what="data set")
    with resources.as_file(resources.files(__name__) / f"{name}.csv") as path:
        return pd.read_csv(path)


def ks_reference(name: str) -> dict:
    """R's bandwidths for a bundled data set (R 4.2, ks 1.14.0, KernSmooth 2.23).

    ``ks`` normalises LSCV slightly differently from the papers (docs/departures.md, item 6),
    so its LSCV bandwidths differ from parzen's by O(1/n).

    Parameters
    ----------
    name : str
        One of :data:`NAMES`.

    Returns
    -------
    dict
        Keys ``n``, ``d``, ``columns``; ``univariate.<column>`` with ``hpi``, ``dpik_stdev``,
        ``dpik_minim``, ``bw_SJ_dpi`` and (n <= 5000) ``hlscv``; for d >= 2 and n <= 5000 the
        matrices ``Hpi``, ``Hlscv``, ``Hlscv_diag``, ``Hscv``.

    Raises
    ------
    ValueError
        For another name.
    """
    choose(name, NAMES, what="data set")
    return json.loads((resources.files(__name__) / "ks_reference.json").read_text())[name]
