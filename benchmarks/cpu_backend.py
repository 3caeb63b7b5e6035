"""parzen's sequential reference and cpu backend against SciPy, scikit-learn, statsmodels, KDEpy and
R's ks: ``parzen bench`` as a script, with the same options.

Usage: python benchmarks/cpu_backend.py [--only plugin,lscv_h,lscv_H,kde] [--full] [--repeat 3]
       [--max-seconds 60] [--no-peers] [--output-dir DIR]

Writes cpu_backend.{json,md} and cpu_backend_*.png (speedup against n) into benchmarks/results/
unless --output-dir says otherwise, and prints the tables last.
"""

import sys
from pathlib import Path

from parzen.cli import app

RESULTS = Path(__file__).parent / "results"

if __name__ == "__main__":
    args = sys.argv[1:]
    if not any(a in ("-o", "--output-dir") or a.startswith("--output-dir=") for a in args):
        args += ["--output-dir", str(RESULTS)]
    app(["bench", *args], prog_name="cpu_backend.py")
