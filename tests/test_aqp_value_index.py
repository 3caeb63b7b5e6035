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
