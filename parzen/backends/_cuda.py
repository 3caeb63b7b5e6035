"""What the GPU modules share: the PyTorch/Triton import, the device and the compute-type rule.

Without a CUDA GPU the GPU code imports only under ``TRITON_INTERPRET=1``, where Triton runs
the same kernels on the CPU (slowly; CI uses that for correctness).
"""

from __future__ import annotations

import os

import numpy as np

try:
    import torch
    import triton
except ImportError as err:  # pragma: no cover - depends on the installation
    raise ImportError("the gpu backend needs PyTorch and Triton: pip install 'parzen[gpu]'") from err

#: True when Triton interprets the kernels on the CPU (no GPU; tests and CI).
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
if not INTERPRETED and not torch.cuda.is_available():
    raise ImportError("the gpu backend needs a CUDA GPU (or TRITON_INTERPRET=1 to interpret its kernels on the CPU)")

DEVICE = torch.device("cpu" if INTERPRETED else "cuda")


def torch_dtype(dtype):
    """The compute type for ``dtype``: float64 when asked for, else float32 (the GPU's fast type)."""
    return torch.float64 if dtype is not None and np.dtype(dtype) == np.float64 else torch.float32


__all__ = ("DEVICE", "INTERPRETED", "torch", "torch_dtype", "triton")
