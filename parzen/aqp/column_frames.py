"""DataFrames made from column arrays as they are, without pandas' checks of each column.

An answer from the exact aggregate tables is a few arrays; ``pd.DataFrame`` of a dict infers and checks
every column.  pandas makes its own frames from arrays without those checks (``DataFrame._from_arrays``)
and reads a column's array without making a Series (``DataFrame._get_column_array``); both are private.
This module uses them only where, probed once at import, they exist and give the frame and arrays that the
public constructor and ``iloc`` give; else (a pandas that changed them) it takes the public ones, the same
frames, slower (micro-timings, pandas 3.1: a three-column answer's frame 24 against 56 us, a column's
array 1.7 against 60 us).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd


def frame_of(arrays: Sequence, columns: pd.Index, index: pd.Index) -> pd.DataFrame:
    """The DataFrame whose columns are ``arrays`` (one-dimensional NumPy or pandas extension arrays, each of
    ``len(index)`` values), labelled ``columns`` (labels may repeat), rows labelled ``index``.

    Parameters
    ----------
    arrays : sequence of array-like
        The columns' values, taken as they are (not copied where pandas need not).
    columns : pandas.Index
        The column labels, kept as the frame's ``columns`` (as this object).
    index : pandas.Index
        The row labels.

    Returns
    -------
    pandas.DataFrame
    """
    if _PRIVATE_FAST_PATH:
        return pd.DataFrame._from_arrays(list(arrays), columns=columns, index=index, verify_integrity=False)
    return _public_frame_of(arrays, columns, index)


def column_array(frame: pd.DataFrame, position: int):
    """The values of ``frame``'s column at ``position``, as the frame holds them (a NumPy or extension array).

    Parameters
    ----------
    frame : pandas.DataFrame
    position : int
        The column's position.

    Returns
    -------
    numpy.ndarray or pandas.api.extensions.ExtensionArray
    """
    if _PRIVATE_FAST_PATH:
        return frame._get_column_array(position)
    return _public_column_array(frame, position)


def _public_frame_of(arrays: Sequence, columns: pd.Index, index: pd.Index) -> pd.DataFrame:
    frame = pd.DataFrame(dict(enumerate(arrays)), index=index, copy=False)
    frame.columns = columns
    return frame


def _public_column_array(frame: pd.DataFrame, position: int):
    values = frame.iloc[:, position].array
    return values.to_numpy() if isinstance(values, pd.arrays.NumpyExtensionArray) else values


def _private_fast_path_holds() -> bool:
    """Whether pandas' private constructor and column reader exist and agree with the public ones on a
    frame like an answer's (a float64 column and a text column, a repeated label)."""
    arrays = [np.array([1.0, 2.0]), pd.Series(["a", None]).array, np.array([3.0, 4.0])]  # as cubes.strings makes texts
    columns, index = pd.Index(["x", "g", "x"], dtype="str"), pd.RangeIndex(2)
    try:
        fast = pd.DataFrame._from_arrays(arrays, columns=columns, index=index, verify_integrity=False)
        read = [fast._get_column_array(k) for k in range(len(arrays))]
    except Exception:  # noqa: BLE001  (any change of a private API: the public path, whatever it raised)
        return False
    public = _public_frame_of(arrays, columns, index)
    return fast.equals(public) and list(fast.dtypes) == list(public.dtypes) and fast.columns is columns and \
        all(type(r) is type(p) and pd.Series(r).equals(pd.Series(p))
            for r, p in zip(read, (_public_column_array(public, k) for k in range(len(arrays)))))


#: Whether :func:`frame_of` and :func:`column_array` take pandas' private path (probed at import).
_PRIVATE_FAST_PATH = _private_fast_path_holds()
