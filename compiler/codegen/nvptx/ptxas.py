"""ptxas, NVIDIA's PTX assembler: invalid PTX fails here, on a machine without a GPU.

Where it is found, first match: $VDLA_PTXAS; the `nvidia-cuda-nvcc-cu12` wheel (the dev extra
installs it: nvidia/cuda_nvcc/bin/ptxas); `ptxas` on PATH.
"""
from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from vdla.hw.errors import CompileError

# Platforms the wheel exists for (pyproject's dev extra installs it there).
WHEEL_PLATFORMS = {("Linux", "x86_64"), ("Linux", "aarch64"), ("Windows", "AMD64")}
TIMEOUT_S = 300


class PtxasError(CompileError, RuntimeError):
    """ptxas rejected the PTX (its messages are in the text), or it could not run."""


@dataclass
class Assembled:
    cubin: bytes
    log: str            # ptxas -v: registers, shared memory, spills per entry


def wheel_supported() -> bool:
    return (platform.system(), platform.machine()) in WHEEL_PLATFORMS


def find_ptxas() -> str | None:
    env = os.environ.get("VDLA_PTXAS")
    if env:
        return env
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        exe = Path(root) / "cuda_nvcc" / "bin" / ("ptxas.exe" if os.name == "nt" else "ptxas")
        if exe.is_file():
            return str(exe)
    return shutil.which("ptxas")


def assemble(ptx: str, arch: str, what: str = "module") -> Assembled:
    """Assemble PTX for `arch` (sm_80, ...) -> the cubin and ptxas's resource report."""
    exe = find_ptxas()
    if exe is None:
        raise PtxasError("ptxas not found: install the dev extra (pip install -e '.[dev]', which brings "
                         "nvidia-cuda-nvcc-cu12) or set VDLA_PTXAS to a ptxas executable")
    with tempfile.TemporaryDirectory(prefix="vdla-ptxas-") as d:
        src, out = Path(d) / "kernels.ptx", Path(d) / "kernels.cubin"
        src.write_text(ptx)
        try:
            r = subprocess.run([exe, f"-arch={arch}", "-v", str(src), "-o", str(out)],
                               capture_output=True, text=True, timeout=TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PtxasError(f"{what}: running {exe} failed: {exc}") from None
        if r.returncode != 0:
            raise PtxasError(f"{what}: ptxas -arch={arch} rejected the PTX (exit {r.returncode}):\n"
                             f"{r.stderr.strip() or r.stdout.strip()}")
        return Assembled(out.read_bytes(), (r.stdout + r.stderr).strip())
