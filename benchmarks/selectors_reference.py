"""Runtime of every selector on one backend (default: the float64 NumPy reference).

Usage: python benchmarks/selectors_reference.py [--n 2000] [--dims 1 4] [--repeat 1] [--backend numpy]

Data: a seeded two-component normal mixture (tie-free, so LSCV is well-behaved).
Writes benchmarks/results/selectors_reference.{json,md} and prints the table last.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _report import write

from parzen import bandwidth

SELECTORS_1D = {
    "plugin": bandwidth.plugin,
    "lscv_h": bandwidth.lscv_h,
    "lscv_H": bandwidth.lscv_H,
    "scott": bandwidth.scott,
    "silverman": bandwidth.silverman,
    "normal_scale": bandwidth.normal_scale,
}
RULES = ("scott", "silverman", "normal_scale")
SELECTORS_ND = {k: v for k, v in SELECTORS_1D.items() if k != "plugin"} | {"lscv_diag": bandwidth.lscv_diag}


def mixture(n: int, d: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(d, d)) / np.sqrt(d) + np.eye(d)
    X = rng.normal(size=(n, d)) @ A.T
    X[: n // 3] += 3.0
    return X[:, 0] if d == 1 else X


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--dims", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--backend", default="numpy", help="backend of the pair-sum selectors")
    args = parser.parse_args()
    rows = []
    for d in args.dims:
        X = mixture(args.n, d)
        for name, selector in (SELECTORS_1D if d == 1 else SELECTORS_ND).items():
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                result = selector(X, **({} if name in RULES else {"backend": args.backend}))
                times.append(time.perf_counter() - t0)
            shown = result if np.ndim(result) == 0 else np.diag(np.atleast_2d(result))
            rows.append({"selector": name, "n": args.n, "d": d, "seconds": float(np.median(times)),
                         "result (h or diag H)": np.array2string(np.atleast_1d(shown), precision=4)})
            print(f"{name:13s} d={d} {rows[-1]['seconds']:.3f} s", flush=True)
    print(write("selectors_reference", rows, ["selector", "n", "d", "seconds", "result (h or diag H)"],
                backend=args.backend))


if __name__ == "__main__":
    main()
