"""The IN / = look-up of categorical codes (parzen.aqp.value_index) agrees with categories.matches."""

import datetime
import itertools

import numpy as np
import pytest

from parzen.aqp.categories import matches
from parzen.aqp.value_index import index_of, member_mask

VALUES = [None, "a", "1", "1.0", 1, 1.0, 2, True, False, 0, -0.0, float("nan"), float("inf"), "None", "True",
          datetime.date(2020, 1, 1), "2020-01-01", 3.5, "nan"]
LITERALS = ["a", "1", 1, True, False, 0, None, float("nan"), float("inf"), "None", "2020-01-01",
            datetime.date(2020, 1, 1), 3.5, "3.5", "nan", 2, -0.0]


@pytest.mark.parametrize("size", [1, 2])
def test_member_mask_is_matches_over_every_pair(size):
    for literals in map(frozenset, itertools.combinations(LITERALS, size)):
        want = np.array([any(matches(v, lit) for lit in literals) for v in VALUES])
        np.testing.assert_array_equal(member_mask(VALUES, literals), want, err_msg=repr(literals))


def test_an_index_is_made_once_per_values_list():
    values = ["x", "y"]
    assert index_of(values) is index_of(values)
    assert index_of(list(values)) is not index_of(values)  # an equal list elsewhere is another column's


def test_no_literal_admits_nothing():
    assert not member_mask(["x", None], frozenset()).any()


NUMBERS = [None, 1, 1.0, 2, True, False, 0, -0.0, float("nan"), 3.5, 2 ** 53, 2 ** 53 + 1, -(2 ** 53), 2 ** 60,
           datetime.date(2020, 1, 1)]
INTS = [0, 1, 2, 7, True, False, 2 ** 53, 2 ** 53 + 1, 2 ** 53 - 1, -(2 ** 53), -(2 ** 53) - 1, 2 ** 60, 2 ** 60 + 1]


@pytest.mark.parametrize("size", [1, 3])
def test_int_literals_on_a_column_without_text_match_as_matches(size):
    """A column with no text value: an int literal finds its float key directly (exact below 2^53); the
    codes are those of categories.matches, also for ints float64 cannot hold and for bools."""
    for literals in map(frozenset, itertools.combinations(INTS, size)):
        want = np.array([any(matches(v, lit) for lit in literals) for v in NUMBERS])
        np.testing.assert_array_equal(member_mask(NUMBERS, literals), want, err_msg=repr(literals))
