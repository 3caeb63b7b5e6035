"""Which codes of a categorical column a query's IN / = literals admit, by dictionary look-ups.

:func:`parzen.aqp.categories.matches` compares one stored value with one literal (text as text,
numbers as numbers); asking it for every value of a column and every literal costs
values x literals Python calls per query (about 1.4 ms for TPC-DS's store columns).  A
:class:`ValueIndex` groups a column's codes once by the keys that comparison uses, so a literal's
codes are one or two look-ups.  A synopsis's values never change once it is loaded, so the index of
a values list is made once and kept (:func:`member_mask`).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np


@dataclass
class ValueIndex:
    """A categorical column's codes keyed as :func:`~parzen.aqp.categories.matches` compares them.

    Parameters
    ----------
    size : int
        The column's number of values (codes 0 .. size - 1).
    by_text : dict of str to list of int
        str(v) -> the codes of the non-NULL values v (every value matches a text literal as text).
    by_text_of_text : dict of str to list of int
        str(v) -> the codes of the text values v (a text value matches a number literal as text).
    by_number : dict of float to list of int
        float(v) -> the codes of the non-text, non-NULL values v that convert to a number other than
        NaN (they match a number literal of the same float; NaN matches nothing).
    """

    size: int
    by_text: dict[str, list[int]] = field(default_factory=dict)
    by_text_of_text: dict[str, list[int]] = field(default_factory=dict)
    by_number: dict[float, list[int]] = field(default_factory=dict)

    @classmethod
    def of(cls, values: list) -> ValueIndex:
        """The index of a column's values (in the order of their codes; None for NULL).

        Parameters
        ----------
        values : list
            The column's distinct values.

        Returns
        -------
        ValueIndex
        """
        index = cls(len(values))
        for code, v in enumerate(values):
            if v is None:
                continue
            index.by_text.setdefault(str(v), []).append(code)
            if isinstance(v, str):
                index.by_text_of_text.setdefault(v, []).append(code)
                continue
            try:
                number = float(v)
            except (TypeError, ValueError):
                continue
            if not math.isnan(number):
                index.by_number.setdefault(number, []).append(code)
        return index

    def codes(self, literal) -> list[int]:
        """The codes whose value ``matches`` ``literal``.

        Parameters
        ----------
        literal : object
            A literal of the query's IN / = (text, a number, a boolean, ...).

        Returns
        -------
        list of int
        """
        if isinstance(literal, str):
            return self.by_text.get(literal, [])
        if type(literal) is int and not self.by_text_of_text and -_EXACT_INT <= literal <= _EXACT_INT:
            return list(self.by_number.get(literal, ()))  # an int that float() keeps exact looks up its float key
        found = list(self.by_text_of_text.get(str(literal), []))
        try:
            number = float(literal)
        except (TypeError, ValueError):
            return found
        return found + self.by_number.get(number, []) if not math.isnan(number) else found


#: The largest integer magnitude below which every int is a float64 exactly (2^53): such an int equals,
#: and hashes as, its float, so it finds the float key of :attr:`ValueIndex.by_number` directly.
_EXACT_INT = 2 ** 53

#: Indexes kept, least recently used dropped first: (the values list, its index) by id of the list.
_KEPT: OrderedDict[int, tuple[list, ValueIndex]] = OrderedDict()
_KEEP = 256
_LOCK = threading.Lock()  # answers may run in several threads (parzen serve)


def index_of(values: list) -> ValueIndex:
    """The :class:`ValueIndex` of ``values``, made once per list (kept for the last 256 lists).

    Parameters
    ----------
    values : list
        A categorical column's distinct values (a synopsis's, never changed once loaded).

    Returns
    -------
    ValueIndex
    """
    with _LOCK:
        kept = _KEPT.get(id(values))
        if kept is not None and kept[0] is values:
            _KEPT.move_to_end(id(values))
            return kept[1]
    index = ValueIndex.of(values)
    with _LOCK:
        _KEPT[id(values)] = (values, index)
        if len(_KEPT) > _KEEP:
            _KEPT.popitem(last=False)
    return index


def member_mask(values: list, literals) -> np.ndarray:
    """Per code of a column, whether its value matches one of ``literals``
    (:func:`parzen.aqp.categories.matches`, for every pair at once).

    Parameters
    ----------
    values : list
        The column's distinct values, in the order of their codes.
    literals : iterable
        The query's IN / = literals on the column.

    Returns
    -------
    numpy.ndarray of bool
        One entry per value.
    """
    index = index_of(values)
    mask = np.zeros(index.size, dtype=bool)
    hit: list[int] = []
    for literal in literals:
        hit += index.codes(literal)
    mask[hit] = True  # set once: one numpy assignment per literal cost 1 us each (51 strata keys on TPC-DS)
    return mask
