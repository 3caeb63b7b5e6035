"""The parameter protocol of scikit-learn estimators, shared by ``KDE`` and ``SparseGridRegressor``:
the keyword parameters of ``__init__`` are stored as given and read back by ``get_params``."""

from __future__ import annotations

import inspect

import numpy as np


class Parameters:
    """``get_params`` / ``set_params`` / ``__repr__`` (parameters that differ from their defaults)."""

    def get_params(self, deep: bool = True) -> dict:
        """The estimator's parameters, as scikit-learn's ``get_params``.

        Parameters
        ----------
        deep : bool, default True
            Accepted for scikit-learn's API; no parameter here is itself an estimator.

        Returns
        -------
        dict
            The keyword parameters of ``__init__`` and their current values.
        """
        return {name: getattr(self, name) for name in inspect.signature(type(self).__init__).parameters if name != "self"}

    def set_params(self, **params):
        """Set parameters by name, as scikit-learn's ``set_params``.

        Parameters
        ----------
        **params
            New values of parameters of ``__init__``; a fitted estimator must be fitted again.

        Returns
        -------
        self

        Raises
        ------
        ValueError
            For a name that is not a parameter; the message lists the valid ones.
        """
        valid = self.get_params()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"unknown parameter {name!r} for {type(self).__name__}; valid: {', '.join(valid)}")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        defaults = {k: p.default for k, p in inspect.signature(type(self).__init__).parameters.items()}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items() if not _same(v, defaults[k])]
        return f"{type(self).__name__}({', '.join(changed)})"


def _same(a, b) -> bool:
    try:
        return bool(np.all(a == b)) and type(a) is type(b)
    except ValueError:
        return False
