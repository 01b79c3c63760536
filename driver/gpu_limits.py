"""The limits of the CUDA GPUs vdla compiles for (compute capability 7.0 and later).

The compiler's GPU checks (thread-block shape, shared-memory budget, launch grid) and the deploy
runtime's GPU device read these; nothing else restates them. They sit in the driver, the lowest
package both may import (vdla.hw is the FPGA accelerator's contract, not a GPU's). Values are the
CUDA programming guide's "technical specifications per compute capability", equal for every
architecture from sm_70 to sm_90 where a kernel uses only statically allocated shared memory (the
48 KiB a block gets without opting into the larger dynamic carve-out).
"""
from __future__ import annotations

# PTX targets vdla emits and CI assembles (ptxas -arch=...): V100, T4 and the RTX 20s, A100,
# the RTX 30s and A10, the RTX 40s and L4, H100. PTX runs on its architecture and every later one
# (the driver compiles it), so the oldest is the most portable and the newest the most specific.
ARCHS = ("sm_70", "sm_75", "sm_80", "sm_86", "sm_89", "sm_90")
# What `--target cuda` means where no GPU is present to say (on a GPU host, the GPU's own).
DEFAULT_ARCH = "sm_80"


def arch_number(arch: str) -> int:
    """sm_86 -> 86; anything else is a ValueError naming the spelling expected."""
    digits = arch.removeprefix("sm_") if isinstance(arch, str) else ""
    if not isinstance(arch, str) or not arch.startswith("sm_") or not digits.isdigit():
        raise ValueError(f"{arch!r} is not a CUDA architecture: expected sm_NN, one of {', '.join(ARCHS)}")
    return int(digits)


def newest_arch_for(device_arch: str) -> str | None:
    """The newest architecture vdla emits whose PTX a GPU of `device_arch` runs; None for a GPU older
    than every one of them."""
    have = arch_number(device_arch)
    usable = [a for a in ARCHS if arch_number(a) <= have]
    return max(usable, key=arch_number) if usable else None

WARP_SIZE = 32
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIM = {"x": 1024, "y": 1024, "z": 64}
MAX_GRID_DIM = {"x": 2 ** 31 - 1, "y": 65535, "z": 65535}
# Static __shared__ memory of one block: a kernel that needs more must allocate it dynamically.
MAX_SHARED_BYTES_PER_BLOCK = 48 * 1024
# Local memory (a thread's private arrays the registers cannot hold) per thread.
MAX_LOCAL_BYTES_PER_THREAD = 512 * 1024

BLOCK_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z")
THREAD_TAGS = ("threadIdx.x", "threadIdx.y", "threadIdx.z")
TAGS = BLOCK_TAGS + THREAD_TAGS


def tag_limit(tag: str) -> int:
    """The largest extent a loop bound to `tag` may have."""
    kind, dim = tag.split(".")
    return (MAX_GRID_DIM if kind == "blockIdx" else MAX_BLOCK_DIM)[dim]
