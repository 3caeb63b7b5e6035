"""Exact bandwidth matrices of benchmarks/binned_plugin_H.py's data at sizes the shared CPU cannot
reach, for measuring the binned ones against (run on a machine with a CUDA GPU).

Usage: python benchmarks/exact_matrix_references.py --cases plugin_H:100000:3:float64 ... --output FILE

Each case is ``selector:n:d:dtype`` (dtype float32 or float64): the selector with
``method="exact"`` on ``binned_plugin_H.mixture(n, d)``, once after a warm-up on the first 2000
rows, on the backend given (default gpu).  The JSON (device, and per case the seconds and H) is
written again after every case, so that a run cut short keeps the cases done.
benchmarks/binned_plugin_H.py reads it with ``--exact-from``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from binned_plugin_H import mixture  # benchmarks/binned_plugin_H.py (the scripts run from benchmarks/)

from parzen import bandwidth


def device_name(backend: str) -> str:
    """The GPU's name on the gpu backend, else the CPU's."""
    if backend == "gpu":
        import torch

        return torch.cuda.get_device_name()
    from _common import machine

    return machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="+", required=True, help="selector:n:d:dtype")
    parser.add_argument("--backend", default="gpu")
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()
    out: dict = {"device": device_name(args.backend), "backend": args.backend, "rows": []}
    for case in args.cases:
        name, n, d, dtype = case.split(":")
        selector, X = getattr(bandwidth, name), mixture(int(n), int(d))
        options = {"backend": args.backend, "method": "exact", "dtype": np.dtype(dtype).type}
        selector(X[:2000], **options)  # warm-up: kernels compiled
        start = time.perf_counter()
        H = np.atleast_2d(selector(X, **options))
        seconds = time.perf_counter() - start
        out["rows"].append({"selector": name, "n": int(n), "d": int(d), "dtype": dtype, "seconds": seconds, "H": H.tolist()})
        print(case, f"{seconds:.2f} s", flush=True)
        args.output.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
