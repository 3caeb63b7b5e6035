"""Binned 1-D pair sums of Gaussian derivatives: sum_{i<j} phi^(r)((x_i - x_j) / g) from bin counts.

With linear-binning counts c_k on a grid of spacing delta (:mod:`parzen.binned.grid`), the full
double sum over all ordered pairs, diagonal included, is estimated by the sum over pairs of nodes

    S_r(g) = sum_{i,j} phi^(r)((x_i - x_j)/g)  ~=  sum_{k,l} c_k c_l phi^(r)((k - l) delta / g)
           = sum_L phi^(r)(L delta / g) A(L),      A(L) = sum_k c_k c_{k+L}

(Wand 1994, "Fast computation of multivariate kernel estimators", J. Comput. Graph. Statist. 3(4),
433-445, section 3; Wand & Jones 1995, *Kernel Smoothing*, appendix D; ``KernSmooth::bkfe``, whose
``sum(gcounts * convolution(gcounts, kappa))`` is the same double sum).  A(L), the autocorrelation
of the counts, does not depend on g or r: it is computed once by a real FFT zero-padded to at least
2M - 1 points (no wrap-around), and each scale g and order r then costs one dot product over the
lags.  Every phi^(r) here is even (r even), so A(-L) = A(L) and S = kappa(0) A(0) + 2 sum_{L>0}
kappa(L) A(L).

The lags are cut at |L delta / g| <= :data:`KERNEL_CUTOFF` = 40, beyond which phi^(r), r <= 8,
underflows to exactly 0 in float64 (exp(-800) = 0): the cut changes no bit of the result, unlike
KernSmooth's tau = 4 + r, whose truncation error depends on g.

The diagonal i = j is then taken out exactly: sum_{i<j} = (S_r(g) - n phi^(r)(0)) / 2, so that
Psi_r(g) = [2 sum_{i<j} + n phi^(r)(0)] / (n^2 g^(r+1)) (docs/departures.md, item 1) is the binned
double sum over n^2 g^(r+1), KernSmooth's estimate.

The binning error of S_r(g) is O((delta/g)^2): linear binning replaces each pair's kernel value by
its bilinear interpolant from the four surrounding node pairs, which differs by
(1/2) (delta/g)^2 [t_i(1 - t_i) + t_j(1 - t_j)] phi^(r+2)(u_ij) + O((delta/g)^4), t the point's
fractional position in its cell.  With t spread over [0, 1) (mean t(1 - t) = 1/6) the relative error
is about (1/6) (delta/g)^2 S_{r+2}(g) / S_r(g); :meth:`BinnedPairSums1D.relative_binning_error`
returns that estimate with 1/4 (the largest t(1 - t)) in place of 1/6.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import fft

from ..kernels import gauss_derivative, gauss_derivative_at_zero
from .grid import BinCounts

#: |u| beyond which phi^(r)(u), r <= 8, is exactly 0 in float64: the lags are cut there.
KERNEL_CUTOFF = 40.0

def counts_autocorrelation(counts: np.ndarray, backend="numpy") -> np.ndarray:
    """A(L) = sum_k c_k c_{k+L} for L = 0..M-1: the convolution of c with c reversed, by real FFTs
    zero-padded against wrap-around, on ``backend`` (``scipy.fft`` on the host, ``torch.fft`` on
    the gpu: :meth:`parzen.backends.KDEBackend.fft_convolve`).

    Parameters
    ----------
    counts : numpy.ndarray
        (M,) bin counts.
    backend : "numpy", "cpu", "gpu" or KDEBackend, default "numpy"
        Who computes the FFTs.

    Returns
    -------
    numpy.ndarray
        (M,) the autocorrelation at lags 0..M-1.
    """
    from ..backends import resolve_backend  # the backends import parzen.binned.grid

    m = counts.size
    size = fft.next_fast_len(2 * m - 1, real=True)
    full = resolve_backend(backend).fft_convolve(counts, counts[::-1], (size,))  # A(L) at m - 1 + L
    return full[m - 1 : 2 * m - 1]


class BinnedPairSums1D:
    """Binned pair sums of Gaussian derivatives over one sample's 1-D bin counts.

    The counts' autocorrelation is computed once (O(M log M)); each (order, scale) then costs one
    dot product over at most min(M, 40 g / delta) lags.  The formula, its sources and its error
    are in the module docstring (:mod:`parzen.binned.pair_sums`).

    Parameters
    ----------
    binned : BinCounts
        1-D linear-binning counts of the sample (unweighted: they sum to n; weighted: to sum w,
        and :meth:`psi` is then the weighted estimate, sum over pairs of v_i v_j, v = w / sum w;
        :meth:`pair_sum` takes out a diagonal of n unit weights, so it needs unweighted counts).
    backend : "numpy", "cpu", "gpu" or KDEBackend, default "numpy"
        Who computes the autocorrelation's FFTs (:func:`counts_autocorrelation`).

    Raises
    ------
    ValueError
        If the counts are not 1-D.
    """

    def __init__(self, binned: BinCounts, backend="numpy") -> None:
        if binned.spec.d != 1:
            raise ValueError(f"binned pair sums are 1-D here, got a {binned.spec.d}-D grid")
        self.spec = binned.spec
        self.n = binned.total
        self.delta = float(binned.spec.spacing[0])
        self._autocorrelation = counts_autocorrelation(binned.counts, backend)

    def double_sum(self, order: int, scales) -> np.ndarray:
        """S_r(g) ~= sum_{i,j} phi^(r)((x_i - x_j)/g) over all ordered pairs, diagonal included.

        Parameters
        ----------
        order : int
            r, an even derivative order (0 to 8).
        scales : float or array_like
            The scales g > 0, in the data's units.

        Returns
        -------
        numpy.ndarray
            One binned double sum per scale (shape of ``scales``).
        """
        g = np.asarray(scales, dtype=np.float64)
        out = np.empty(g.shape)
        a = self._autocorrelation
        for index, scale in np.ndenumerate(g):
            lags = min(a.size - 1, math.ceil(KERNEL_CUTOFF * scale / self.delta))
            kappa = gauss_derivative(order, np.arange(lags + 1) * (self.delta / scale))
            out[index] = kappa[0] * a[0] + 2.0 * np.dot(kappa[1:], a[1 : lags + 1])
        return out

    def pair_sum(self, order: int, scales) -> np.ndarray:
        """sum_{i<j} phi^(r)((x_i - x_j)/g): the binned double sum less the exact diagonal, halved.

        (S_r(g) - n phi^(r)(0)) / 2 (module docstring).

        Parameters
        ----------
        order : int
            r, an even derivative order (0 to 8).
        scales : float or array_like
            The scales g > 0, in the data's units.

        Returns
        -------
        numpy.ndarray
            One pair sum per scale (shape of ``scales``).
        """
        return 0.5 * (self.double_sum(order, scales) - self.n * gauss_derivative_at_zero(order))

    def psi(self, order: int, scales) -> np.ndarray:
        """Psi_r(g) = S_r(g) / (n^2 g^(r+1)), the binned estimate of int f^(r) f (KernSmooth's bkfe).

        Parameters
        ----------
        order : int
            r, an even derivative order (0 to 8).
        scales : float or array_like
            The pilot bandwidths g > 0, in the data's units.

        Returns
        -------
        numpy.ndarray
            One estimate per scale.
        """
        g = np.asarray(scales, dtype=np.float64)
        return self.double_sum(order, g) / (self.n * self.n * g ** (order + 1))

    def relative_binning_error(self, order: int, scales) -> np.ndarray:
        """An estimate of |binned S_r(g) / exact S_r(g) - 1|: (1/4) (delta/g)^2 |S_{r+2}(g) / S_r(g)|.

        The leading term of the linear-binning error (module docstring) with t(1 - t) at its
        largest, 1/4, so that it also covers data that sit on a lattice (rounded values).

        Parameters
        ----------
        order : int
            r, an even derivative order (0 to 6).
        scales : float or array_like
            The scales g > 0, in the data's units.

        Returns
        -------
        numpy.ndarray
            One estimate per scale.
        """
        g = np.asarray(scales, dtype=np.float64)
        ratio = self.double_sum(order + 2, g) / self.double_sum(order, g)
        return 0.25 * (self.delta / g) ** 2 * np.abs(ratio)
