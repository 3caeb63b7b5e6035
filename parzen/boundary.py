"""Reflection at the edges of a bounded 1-D variable (``KDE(boundary=(low, high))``).

The estimate of data known to lie in [a, b] adds to each kernel its mirror images in a and b
(Schuster 1985, Communications in Statistics - Theory and Methods 14(5), 1123-1136; Silverman 1986,
section 2.10):

    f_R(x) = sum_i w_i [K_h(x - X_i) + K_h(x - (2a - X_i)) + K_h(x - (2b - X_i))]  for a <= x <= b,

and 0 outside; for a symmetric kernel K_h(x - (2a - X_i)) = K_h((2a - x) - X_i), so f_R(x) is the
unbounded estimate f at x, 2a - x and 2b - x.  With one edge f_R integrates to exactly 1 over
[a, b]; with two, the mass the image in one edge puts beyond the other is left out, at most
2 (1 - Phi((b - a) / h)) for the Gaussian (1e-15 where h < (b - a) / 8).  Its distribution
function follows from the unbounded one G:  F_R(x) = G(x) - G(2a - x) + G(2b - a) - G(2b - x).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Reflection:
    """The edges of a bounded 1-D variable; -inf and inf where there is none.

    Parameters
    ----------
    low, high : float
        The edges, low < high (at least one finite).
    """

    low: float
    high: float

    @classmethod
    def of(cls, boundary, d: int) -> Reflection | None:
        """The reflection ``KDE(boundary=...)`` asks for, checked (None for no boundary).

        Parameters
        ----------
        boundary : None or (low, high)
            The edges; either may be None (no edge on that side).
        d : int
            Columns of the data.

        Returns
        -------
        Reflection or None

        Raises
        ------
        ValueError
            If ``boundary`` is not a pair of numbers or None with low < high, or d > 1.
        """
        if boundary is None:
            return None
        try:
            low, high = boundary
        except (TypeError, ValueError):
            raise ValueError(f"boundary must be None or a pair (low, high), either of which may be None; got {boundary!r}") from None
        edges = [-math.inf if low is None else low, math.inf if high is None else high]
        for value in edges:
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or math.isnan(value):
                raise ValueError(f"boundary must hold numbers or None, got {boundary!r}")
        if not edges[0] < edges[1]:
            raise ValueError(f"boundary must have low < high, got {boundary!r}")
        if d != 1:
            raise ValueError(f"boundary= reflects 1-D data; these data have {d} columns: fit each bounded column alone")
        return cls(float(edges[0]), float(edges[1]))

    def check(self, values: np.ndarray) -> None:
        """Raise if any value lies outside [low, high].

        Raises
        ------
        ValueError
            Naming how many values lie outside and the first of them.
        """
        outside = (values < self.low) | (values > self.high)
        if outside.any():
            first = int(np.flatnonzero(outside)[0])
            raise ValueError(
                f"{int(outside.sum())} value(s) of X lie outside boundary=({self.low:g}, {self.high:g}), first "
                f"{values[first]:g} in row {first}; widen the boundary or drop those rows"
            )

    def images(self, q: np.ndarray) -> np.ndarray:
        """(k, m) the points whose unbounded density adds up to f_R at q: q, 2 low - q, 2 high - q
        (the finite edges only)."""
        rows = [q]
        if math.isfinite(self.low):
            rows.append(2.0 * self.low - q)
        if math.isfinite(self.high):
            rows.append(2.0 * self.high - q)
        return np.stack(rows)

    def inside(self, q: np.ndarray) -> np.ndarray:
        """Which points lie in [low, high]."""
        return (q >= self.low) & (q <= self.high)

    def cdf_points(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The points where F_R(q) = sum_plus G - sum_minus G (module docstring), q clipped to
        [low, high]: (plus, minus), each (2, m), infinite where an edge is absent."""
        x = np.clip(q, self.low, self.high)
        with np.errstate(invalid="ignore"):
            far = np.full_like(x, 2.0 * self.high - self.low)
        return np.stack([x, far]), np.stack([2.0 * self.low - x, 2.0 * self.high - x])

    def fold(self, x: np.ndarray) -> np.ndarray:
        """Each value reflected once in the edge it crossed (draws from the unbounded estimate)."""
        x = np.where(x < self.low, 2.0 * self.low - x, x)
        return np.where(x > self.high, 2.0 * self.high - x, x)
