"""Shared fixtures: the real data sets and the reference values computed from them.

``tests/refdata/`` holds copies of the project's shared reference files (R ``ks`` /
``KernSmooth`` results and float64 values of the papers' algorithms; see its README).
"""

import json
import os
import shutil
from pathlib import Path

import pytest

# Without an NVIDIA GPU the GPU backend's Triton kernels run under Triton's interpreter (CI);
# this must be set before Triton is first imported.
if shutil.which("nvidia-smi") is None:
    os.environ.setdefault("TRITON_INTERPRET", "1")

REFDATA = Path(__file__).parent / "refdata"
DATASETS = ("faithful", "quakes", "tempb")


@pytest.fixture(scope="session")
def seed_reference() -> dict:
    return json.loads((REFDATA / "seed_reference.json").read_text())


@pytest.fixture(scope="session")
def ks_reference() -> dict:
    return json.loads((REFDATA / "ks_reference.json").read_text())


@pytest.fixture(scope="session")
def datasets() -> dict:
    from parzen.datasets import load

    return {name: load(name) for name in DATASETS}
