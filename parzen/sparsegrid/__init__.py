"""Sparse-grid regression (paper 004): regular grids, the operators B v and B^T alpha on every
backend, and a scikit-learn style regressor solved by conjugate gradients."""

from .grid import BASES, SparseGrid, regular_grid_size
from .operators import design
from .regressor import SparseGridRegressor

__all__ = ["BASES", "SparseGrid", "SparseGridRegressor", "design", "regular_grid_size"]
