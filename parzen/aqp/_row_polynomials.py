"""The per-row terms of SUM / AVG of a polynomial of columns, in one compiled pass (Numba).

:meth:`parzen.aqp.aggregates._SampleTerms.polynomial` gives each sampled row the SUM term of
sum_j c_j prod_col x_col^k_j,col: per monomial j, the row's validity (1, or 0 where an input is NULL)
times its range columns' kernel factors (masses, or kernel moments for a power: given as arrays) times
its other columns' values to their powers (NULL as 0, as ``np.nan_to_num`` has them), added up with
the coefficients.  :func:`polynomial_rows` reads the values from the sample's array itself (no
gathered copy per column) and multiplies and adds in the order of the NumPy expression it replaces,
so the floats are the same; powers 1 and 2 only (x * x is NumPy's x ** 2; a higher power is NumPy's
``pow``, left to NumPy).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

_LARGEST = np.finfo(np.float64).max


@njit(cache=True, nogil=True)  # answers may run in several threads (parzen serve)
def polynomial_rows(rows, data, inputs, coefficients, factors, factor_of, factor_starts, free_columns, free_powers,
                    free_starts):
    """Per row: the polynomial's SUM term and its validity.

    Parameters
    ----------
    rows : numpy.ndarray of int
        The sampled rows (columns of ``data``).
    data : numpy.ndarray of float64, shape (columns, sample rows)
        The sample.
    inputs : numpy.ndarray of int
        The rows of ``data`` of the polynomial's inputs (a NULL in one makes the row's terms 0).
    coefficients : numpy.ndarray of float64
        Per monomial j, c_j.
    factors : numpy.ndarray of float64, shape (factors, len(rows))
        The range columns' kernel factors per row.
    factor_of, factor_starts : numpy.ndarray of int
        Monomial j multiplies ``factors[factor_of[f]]`` for f in [factor_starts[j], factor_starts[j + 1]).
    free_columns, free_powers, free_starts : numpy.ndarray of int
        Monomial j multiplies the value in ``data[free_columns[f]]`` to the power ``free_powers[f]``
        (1 or 2) for f in [free_starts[j], free_starts[j + 1]).

    Returns
    -------
    terms, valid : numpy.ndarray of float64
        Per row: sum_j c_j (valid prod factors prod values^powers), added from 0.0 in j's order, and
        1.0 where no input is NULL, else 0.0.
    """
    n = rows.size
    valid = np.ones(n)
    for q in range(inputs.size):  # one pass per column and factor: short loops that the compiler unrolls
        column = data[inputs[q]]
        for i in range(n):
            valid[i] = valid[i] * (0.0 if math.isnan(column[rows[i]]) else 1.0)
    terms = np.zeros(n)
    term = np.empty(n)
    for j in range(coefficients.size):
        term[:] = valid
        for f in range(factor_starts[j], factor_starts[j + 1]):
            factor = factors[factor_of[f]]
            for i in range(n):
                term[i] = term[i] * factor[i]
        for f in range(free_starts[j], free_starts[j + 1]):
            column = data[free_columns[f]]
            square = free_powers[f] == 2
            for i in range(n):
                v = column[rows[i]]
                if math.isnan(v):
                    v = 0.0
                elif math.isinf(v):
                    v = _LARGEST if v > 0.0 else -_LARGEST
                v = v - 0.0
                term[i] = term[i] * (v * v if square else v)
        c = coefficients[j]
        for i in range(n):
            terms[i] = terms[i] + c * term[i]
    return terms, valid
