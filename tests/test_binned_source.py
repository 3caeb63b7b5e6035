"""Chunked data: summaries of chunks add up to the summary of all rows."""

from functools import partial

import numpy as np
import pytest

from parzen.binned.grid import GridSpec, linear_bin
from parzen.binned.source import ArrayChunks, Chunk, Moments, bin_chunk


@pytest.fixture
def data():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(10_001, 3)) @ np.array([[2.0, 0, 0], [0.5, 1, 0], [0.1, -0.3, 0.2]]) + [1e3, -5, 0]
    return X, rng.uniform(0.1, 2.0, size=len(X))


@pytest.mark.parametrize("chunk_rows", [1, 7, 4096, 1 << 20])
@pytest.mark.parametrize("weighted", [False, True])
def test_moments_of_chunks_equal_one_pass(data, chunk_rows, weighted):
    X, w = data
    if chunk_rows == 1:
        X, w = X[:300], w[:300]
    w = w if weighted else None
    m = ArrayChunks(X, w, chunk_rows=chunk_rows).reduce(Moments.of)
    assert m.rows == len(X) and m.null_rows == 0
    np.testing.assert_allclose(m.weight, len(X) if w is None else w.sum(), rtol=1e-12)
    np.testing.assert_array_equal(m.lows, X.min(axis=0))
    np.testing.assert_array_equal(m.highs, X.max(axis=0))
    np.testing.assert_allclose(m.mean, np.average(X, axis=0, weights=w), rtol=1e-12)
    expected = np.cov(X.T, fweights=None, aweights=None, ddof=1) if w is None else (
        (X - np.average(X, axis=0, weights=w)).T * w) @ (X - np.average(X, axis=0, weights=w)) / (w.sum() - 1)
    np.testing.assert_allclose(m.covariance, expected, rtol=1e-10, atol=1e-12)


def test_empty_chunks_are_the_identity():
    empty = Moments.of(Chunk(np.zeros((0, 2)), null_rows=3))
    full = Moments.of(Chunk(np.array([[1.0, 2.0], [3.0, 5.0]])))
    for total in (empty + full, full + empty):
        assert total.rows == 2 and total.null_rows == 3
        np.testing.assert_array_equal(total.mean, full.mean)
        np.testing.assert_array_equal(total.scatter, full.scatter)


def test_binned_chunks_equal_one_pass(data):
    X, w = data
    X = X[:, :2]
    spec = GridSpec.covering(X.min(axis=0), X.max(axis=0), (33, 17))
    chunked = ArrayChunks(X, w, chunk_rows=1000).reduce(partial(bin_chunk, spec=spec, backend="numpy"))
    np.testing.assert_allclose(chunked.counts, linear_bin(X, spec, w, backend="numpy").counts, rtol=1e-12, atol=1e-12)


def test_covariance_needs_weight_above_one():
    with pytest.raises(ValueError, match="total weight above 1"):
        _ = Moments.of(Chunk(np.array([[1.0]]))).covariance


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"values": [1.0, np.nan]}, "non-finite"),
        ({"values": [1.0, 2.0], "weights": [1.0, -1.0]}, "non-negative"),
        ({"values": [1.0, 2.0], "weights": [1.0]}, "one per row"),
        ({"values": [1.0, 2.0], "chunk_rows": 0}, "chunk_rows"),
        ({"values": [1.0, 2.0], "columns": ["a", "b"]}, "2 column names for 1"),
    ],
)
def test_array_chunks_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ArrayChunks(**kwargs)


def test_as_chunked_recognises_chunked_data_only():
    from parzen.binned.source import as_chunked

    chunked = ArrayChunks([1.0, 2.0])
    assert as_chunked(chunked) is chunked
    assert as_chunked(np.array([1.0, 2.0])) is None
