"""The limits of the CUDA GPUs vdla compiles for (compute capability 8.0 and 9.0).

The compiler's GPU checks (thread-block shape, shared-memory budget, launch grid) and the deploy
runtime's GPU device read these; nothing else restates them. Values are the CUDA programming
guide's "technical specifications per compute capability", equal for sm_80 and sm_90 where a
kernel uses only statically allocated shared memory (the 48 KiB a block gets without opting into
the larger dynamic carve-out).
"""
from __future__ import annotations

# PTX targets vdla emits and CI assembles (ptxas -arch=...): A100 and H100.
ARCHS = ("sm_80", "sm_90")
DEFAULT_ARCH = "sm_80"

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
