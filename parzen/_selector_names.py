"""The names of the registered bandwidth selectors, for code that must not import the selectors.

The command line builds its ``--method`` and ``--bandwidth`` help from these when it starts; importing
:data:`parzen.bandwidth.SELECTORS` itself loads SciPy and Numba, which ``parzen aqp query`` never needs.
tests/test_cold_start.py checks that they are the keys of :data:`parzen.bandwidth.SELECTORS`, in order.
"""

#: The keys of :data:`parzen.bandwidth.SELECTORS`, in the same order.
SELECTOR_NAMES = (
    "plugin", "lscv_h", "lscv_H", "lscv_diag", "plugin_H", "plugin_diag", "scv_H", "scott", "silverman", "normal_scale",
    "isj",
)
