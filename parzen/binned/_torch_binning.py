"""Linear binning with PyTorch (the gpu backend's; it runs on any torch device, the CPU included).

The shares of the float64 reference :func:`parzen.binned.grid.linear_bin` (Wand 1994,
section 2), computed for a chunk of rows at a time on the device: node positions
p = (x - low) / (high - low) * (m - 1) (in this order: no float64 rounding moves a point of
[low, high] outside [0, m - 1]) and fractions f = p - floor(p) in the compute type, then for each of the
2^d corners of the cells one ``index_add_`` of w * prod_a (1 - f_a or f_a) into the flattened
grid, which is float64 whatever the compute type (float32 sums stop growing at 2^24 per node).
Rows travel to the device :data:`CHUNK_ROWS` at a time, so host data larger than the device's
memory bin too.
"""

from __future__ import annotations

import itertools

import numpy as np

#: Rows sent to the device and binned at a time (2^22 rows of 4 float64 columns: 128 MiB).
CHUNK_ROWS = 1 << 22


def linear_bin_counts(values: np.ndarray, weights: np.ndarray | None, lows, highs, sizes, *, torch, device,
                      dtype) -> tuple[np.ndarray, int]:
    """Linear-binning counts of the rows of ``values`` by ``index_add_`` on ``device``.

    Parameters
    ----------
    values : numpy.ndarray
        (n, d) float64 rows.
    weights : numpy.ndarray or None
        (n,) float64 weights (None: 1 per row).
    lows, highs : array_like of shape (d,)
        The grid's first and last node per axis.
    sizes : tuple of int
        Nodes per axis.
    torch : module
        The PyTorch module (imported by the caller, which owns the optional dependency).
    device : torch.device
        Where to bin.
    dtype : torch.dtype
        The type of positions and shares (torch.float64 or torch.float32).

    Returns
    -------
    counts : numpy.ndarray
        float64 array of shape ``sizes``.
    outside : int
        The first row outside the grid's box (NaN rows included), or -1 when every row is
        inside; the counts are then incomplete.  In float32 a row within 8 float32 epsilons
        (relative) of a face counts as inside and is moved onto the face.
    """
    n, d = values.shape
    low = torch.as_tensor(np.asarray(lows, dtype=np.float64), device=device).to(dtype)
    width = torch.as_tensor(np.asarray(highs, dtype=np.float64) - np.asarray(lows, dtype=np.float64), device=device).to(dtype)
    last_node = torch.as_tensor(np.asarray(sizes, dtype=np.float64) - 1, device=device).to(dtype)
    last_cell = torch.as_tensor(np.asarray(sizes, dtype=np.int64) - 2, device=device)
    host_strides = [int(v) for v in np.cumprod((1, *sizes[:0:-1]))[::-1]]  # C order
    strides = torch.as_tensor(host_strides, dtype=torch.int64, device=device)
    # float32 positions of points on the box's faces may round just outside: let them in and clamp
    slack = 0.0 if dtype == torch.float64 else 8 * float(torch.finfo(dtype).eps)
    counts = torch.zeros(int(np.prod(sizes)), dtype=torch.float64, device=device)
    for start in range(0, n, CHUNK_ROWS):
        rows = torch.as_tensor(values[start : start + CHUNK_ROWS], device=device).to(dtype)
        if weights is None:
            w = torch.ones(len(rows), dtype=dtype, device=device)
        else:
            w = torch.as_tensor(weights[start : start + CHUNK_ROWS], device=device).to(dtype)
        positions = (rows - low) / width * last_node
        inside = ((positions >= -slack) & (positions <= (last_cell + 1) * (1 + slack))).all(dim=1)
        if not bool(inside.all()):
            return counts.cpu().numpy().reshape(sizes), start + int(torch.argmin(inside.to(torch.int8)))
        if slack:
            positions = torch.clamp(positions, min=torch.zeros_like(low), max=(last_cell + 1).to(dtype))
        first = torch.minimum(torch.floor(positions).to(torch.int64), last_cell)
        frac = positions - first.to(dtype)
        node = (first * strides).sum(dim=1)
        for corner in itertools.product((0, 1), repeat=d):
            share = w.clone()
            offset = 0
            for a, c in enumerate(corner):
                share *= frac[:, a] if c else 1.0 - frac[:, a]
                offset += c * host_strides[a]
            counts.index_add_(0, node + offset, share.to(torch.float64))
    return counts.cpu().numpy().reshape(sizes), -1
