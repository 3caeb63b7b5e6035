"""What the benchmark scripts share: the machine they ran on, in words."""

from __future__ import annotations

import os
import platform
from pathlib import Path


def machine() -> str:
    """``"<CPU model>, <n> logical cores, <OS>"``, the model from /proc/cpuinfo where there is one."""
    model = platform.processor() or "cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} logical cores, {platform.system()}"
