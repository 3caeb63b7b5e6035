"""One BLAS thread inside parzen's selectors and KDE evaluation.

OpenBLAS keeps its worker threads spinning for a while after each call.  parzen's hot loops
alternate small BLAS calls (whitening by d x d Cholesky factors) with Numba parallel regions,
and on a machine with few cores those spinning threads take the cores the Numba threads need:
on 2 cores one LSCV_H objective (n = 1000, d = 4) took 9 ms with 2 Numba threads against
3.7 ms with 1, and 2.0 ms with BLAS on one thread.  parzen's own BLAS work is tiny (d <= a few
dozen), so the public entry points run it on one thread; the caller's setting is restored after.
"""

from __future__ import annotations

from threadpoolctl import ThreadpoolController

_controller = ThreadpoolController()


def single_threaded_blas(function):
    """Decorate ``function`` to run with BLAS limited to one thread (threadpoolctl).

    Parameters
    ----------
    function : callable
        A public entry point whose BLAS calls are small (d x d).

    Returns
    -------
    callable
        ``function`` wrapped: the BLAS thread limit is 1 during each call, and the caller's
        setting is restored after it.
    """
    return _controller.wrap(limits=1, user_api="blas")(function)
