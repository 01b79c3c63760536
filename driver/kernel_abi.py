"""The CPU-kernel ABI: what the code the compiler emits (vdla.compiler.codegen, link.py) and
the deploy runtime that loads and calls it (cpu_kernel.py, thread_pool.py) agree on.

It lives in the deploy runtime because a board runs kernels without the compiler, and
ARCHITECTURE.md names the CPU-kernel ABI among what the compiler may import from vdla.driver.
It is not in vdla.hw: that package is the accelerator's contract, and how a CPU calls a
compiled function is no fact of the accelerator. It imports nothing but the standard library
and numpy, so a board and both emitters read it alike.

Symbols of a kernel NAME in an object:
  NAME               the entry, KERNEL_SIGNATURE: int32_t NAME(void* const* buffers), the
                     buffers in the kernel's argument order (inputs, then outputs); it
                     returns KERNEL_OK;
  NAME__argspec      its argument record, NUL-terminated JSON [[shape, dtype], ...]
                     (encode_argspec / decode_argspec): what the code reads and writes;
  NAME__num_threads  an int32 (NUM_THREADS_TYPE): the threads its parallel loops ask for.
A parallel loop calls PARALLEL_FOR(task, env, max_chunks, threads), which runs
task(env, c, n) for every c in 0..n-1 on up to `threads` threads (MAX_THREADS at most); the
runtime picks n, any count 1 <= n <= max_chunks, so the task must split its iterations for
any n; `threads` may carry the flag WARM_POOL_ONLY. Objects compiled before chunks existed
call PARALLEL_FOR_LEGACY(task, env, n): n chunks on n threads.
Signatures are (result, parameters) in LLVM's spelling of the C types, from which the
emitters build their LLVM types and the loader its ctypes prototype.

An artifact holds each kernel's object under kernel_object_key(triple, NAME), and the
kernels of a triple linked into one shared object (with the thread pool) under
shared_object_key(triple).
"""
from __future__ import annotations

import json
import numbers

import numpy as np

KERNEL_SIGNATURE = ("i32", ("ptr",))
KERNEL_OK = 0
NUM_THREADS_TYPE = "i32"
TASK_SIGNATURE = ("void", ("ptr", "i64", "i64"))                     # task(env, chunk, nchunks)
PARALLEL_FOR = "vdla_parallel_for_chunks"
PARALLEL_FOR_SIGNATURE = ("void", ("ptr", "ptr", "i64", "i64"))      # (task, env, max_chunks, threads)
PARALLEL_FOR_LEGACY = "vdla_parallel_for"
PARALLEL_FOR_LEGACY_SIGNATURE = ("void", ("ptr", "ptr", "i64"))      # (task, env, n)
# The pool's threads, the caller's included; a kernel asking for more gets this many.
MAX_THREADS = 64
# OR'd into PARALLEL_FOR's threads: use the pool only while no worker sleeps, else run every
# chunk on the calling thread (a loop too small to repay waking one). A pool that predates the
# flag reads it as more threads than it has, and runs the loop on all of them.
WARM_POOL_ONLY = 1 << 30

# Where a kernel's buffers start: the executor's arena and parameters are aligned so, and so are
# the buffers of anything that times a kernel for the executor (the tuner, the benchmarks): a
# 64-byte vector read from a buffer numpy aligned to 16 bytes spans two cache lines (on the Intel
# Xeon, ResNet-18's 512-channel 7x7 conv with 1 thread: 1.87 ms at a 16-byte offset, 1.73 aligned;
# its F(2x2) Winograd conv with 2 threads 0.59 against 0.57; weight-bound kernels such as an LSTM
# step's matvec lost a sixth of their time).
BUFFER_ALIGN = 64

# Kernel names are identifiers, so no kernel object has this name.
SHARED_OBJECT = "kernels.so"


def aligned(array) -> np.ndarray:
    """`array` where it starts on a BUFFER_ALIGN boundary (C-contiguous), else an aligned copy
    (as writeable as the original)."""
    array = np.asarray(array)
    if array.ctypes.data % BUFFER_ALIGN == 0 and array.flags.c_contiguous:
        return array
    raw = np.empty(array.nbytes + BUFFER_ALIGN, np.uint8)
    start = (-raw.ctypes.data) % BUFFER_ALIGN
    out = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    out.flags.writeable = array.flags.writeable
    return out


def argspec_symbol(kernel: str) -> str:
    return f"{kernel}__argspec"


def num_threads_symbol(kernel: str) -> str:
    return f"{kernel}__num_threads"


def kernel_object_key(triple: str, kernel: str) -> str:
    return f"{triple}/{kernel}"


def shared_object_key(triple: str) -> str:
    return f"{triple}/{SHARED_OBJECT}"


def num_threads(n) -> int:
    """The NAME__num_threads value for a request of `n` threads: n, or MAX_THREADS where n
    asks for more (the pool runs no more, and the int32 must not wrap). ValueError unless n
    is a positive integer."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"threads must be a positive integer, got {n!r}")
    return min(int(n), MAX_THREADS)


def argspec_record(specs) -> list:
    """[(shape, dtype), ...] -> the JSON form [[shape, dtype], ...] (also the artifact index's)."""
    return [[[int(d) for d in shape], str(dtype)] for shape, dtype in specs]


def encode_argspec(specs) -> bytes:
    """The bytes of a NAME__argspec symbol."""
    return json.dumps(argspec_record(specs)).encode() + b"\0"


def decode_argspec(raw) -> list[tuple[tuple[int, ...], str]]:
    """A NAME__argspec record (bytes or text, without its NUL) -> [(shape, dtype), ...], the
    dtypes spelled as numpy spells them. ValueError saying what is wrong."""
    try:
        record = json.loads(raw)
    except (ValueError, TypeError, RecursionError) as exc:
        raise ValueError(f"not JSON ({exc})") from None
    if not isinstance(record, list):
        raise ValueError(f"expected a list of [shape, dtype], got {type(record).__name__}")
    specs = []
    for k, item in enumerate(record):
        if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], list)
                and isinstance(item[1], str)):
            raise ValueError(f"argument {k}: expected [shape, dtype], got {item!r}")
        shape, dtype = item
        if not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
            raise ValueError(f"argument {k}: the shape {shape} is not a list of non-negative integers")
        try:
            dtype = str(np.dtype(dtype))
        except TypeError:
            raise ValueError(f"argument {k}: {dtype!r} is not a dtype") from None
        specs.append((tuple(shape), dtype))
    return specs
