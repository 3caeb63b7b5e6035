"""Host rows to the GPU in chunks: two page-locked buffers, copies on their own stream.

Data in host memory (10^9 float32 values, say) go to the device a chunk of rows at a time, so
the device holds two chunks of each array, never the whole.  Chunk i is copied by the host
(PyTorch's multithreaded copy) into page-locked buffer i mod 2, sent by a copy stream, and
computed on by the caller's stream once it has arrived; meanwhile the host fills the other
buffer with chunk i + 1.  So the host's copy, the transfer and the kernels of neighbouring
chunks overlap, and a page-locked buffer is reused only after its transfer has finished (an
event), a device buffer only after the kernels that read it (another event).

Under the Triton interpreter (no GPU) the chunks are the host arrays' own rows, as CPU tensors.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from ._cuda import DEVICE, INTERPRETED, torch

#: The types that travel as they are; any other is converted to float64 chunk by chunk.
_TRAVELLING = (np.dtype(np.float32), np.dtype(np.float64))


def travelling_type(array: np.ndarray) -> np.dtype:
    """The type ``array`` is sent in: its own if float32 or float64, else float64.

    Parameters
    ----------
    array : numpy.ndarray
        A host array.

    Returns
    -------
    numpy.dtype
    """
    return array.dtype if array.dtype in _TRAVELLING else np.dtype(np.float64)


def chunk_rows(arrays: Sequence[np.ndarray], chunk_bytes: int) -> int:
    """Rows per chunk so that the widest array's chunk is about ``chunk_bytes`` (at least 1).

    Parameters
    ----------
    arrays : sequence of numpy.ndarray
        Arrays of the same number of rows.
    chunk_bytes : int
        The bytes of one array's chunk.

    Returns
    -------
    int
    """
    row_bytes = max(int(np.prod(a.shape[1:], dtype=np.int64)) * travelling_type(a).itemsize for a in arrays)
    return max(1, chunk_bytes // row_bytes)


def device_chunks(arrays: Sequence[np.ndarray], rows_per_chunk: int) -> Iterator[tuple[int, list]]:
    """The row chunks of ``arrays`` as device tensors, in order, through two page-locked buffers.

    Parameters
    ----------
    arrays : sequence of numpy.ndarray
        Host arrays with the same number of rows (the first axis).
    rows_per_chunk : int
        Rows per chunk.

    Yields
    ------
    start : int
        The chunk's first row.
    tensors : list of torch.Tensor
        The chunk of each array on the device, in its travelling type (:func:`travelling_type`);
        valid until the next chunk is asked for.  Work queued on the current stream before then
        may read them: the buffers are not overwritten until it has run.
    """
    n = len(arrays[0])
    if INTERPRETED:
        for start in range(0, n, rows_per_chunk):
            stop = min(n, start + rows_per_chunk)
            yield start, [torch.from_numpy(_host_chunk(a, start, stop)) for a in arrays]
        return
    compute = torch.cuda.current_stream(DEVICE)
    copier = torch.cuda.Stream(DEVICE)
    shapes = [(rows_per_chunk, *a.shape[1:]) for a in arrays]
    types = [_torch_type(travelling_type(a)) for a in arrays]
    pinned = [[torch.empty(s, dtype=t, pin_memory=True) for s, t in zip(shapes, types)] for _ in range(2)]
    device = [[torch.empty(s, dtype=t, device=DEVICE) for s, t in zip(shapes, types)] for _ in range(2)]
    sent: list = [None, None]  # event: the buffer's last transfer has finished
    used: list = [None, None]  # event: the kernels reading the device buffer have run
    for i, start in enumerate(range(0, n, rows_per_chunk)):
        b = i % 2
        stop = min(n, start + rows_per_chunk)
        rows = stop - start
        if sent[b] is not None:
            sent[b].synchronize()
        for array, host in zip(arrays, pinned[b]):
            _fill(host[:rows], _host_chunk(array, start, stop))
        with torch.cuda.stream(copier):
            if used[b] is not None:
                copier.wait_event(used[b])
            for dev, host in zip(device[b], pinned[b]):
                dev[:rows].copy_(host[:rows], non_blocking=True)
            sent[b] = torch.cuda.Event()
            sent[b].record(copier)
        compute.wait_event(sent[b])
        yield start, [dev[:rows] for dev in device[b]]
        used[b] = torch.cuda.Event()
        used[b].record(compute)


def _host_chunk(array: np.ndarray, start: int, stop: int) -> np.ndarray:
    return np.ascontiguousarray(array[start:stop], dtype=travelling_type(array))


def _fill(host, chunk: np.ndarray) -> None:
    """Copy ``chunk`` into the page-locked tensor ``host`` (PyTorch's copy, multithreaded; NumPy's
    for a read-only array, which PyTorch does not wrap)."""
    if chunk.flags.writeable:
        host.copy_(torch.from_numpy(chunk))
    else:
        host.numpy()[...] = chunk


def _torch_type(dtype: np.dtype):
    return torch.float32 if dtype == np.float32 else torch.float64
