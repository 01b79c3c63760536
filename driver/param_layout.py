"""Where the executor keeps a model's parameters for its kernels: every one on a kernel-aligned
boundary (kernel_abi.BUFFER_ALIGN), all of them in one allocation.

A loaded artifact's parameters are views of the one buffer its file was read into, aligned
already (artifact.load), and stay so. An artifact made in memory (compile_model, then run) holds
each parameter as its own numpy array, most of them 16 bytes past a boundary; copied one by one
(each its own allocation), ResNet-18 ran 8-20% slower than the same weights loaded from its file,
in one process on the Intel Xeon (2 threads, in turns with onnxruntime: 12.26 against 11.19 ms,
13.08 against 11.09); packed into one allocation, as fast as from the file. (Likely the pages: one
large allocation gets huge pages where the OS gives them, as numpy asks, where the separate ones
below numpy's threshold stay on 4 KB pages; not measured apart.)"""
from __future__ import annotations

import numpy as np

from .kernel_abi import BUFFER_ALIGN


def _root(array: np.ndarray):
    """The allocation an array's memory belongs to (through views and memoryviews)."""
    owner = array
    while True:
        base = owner.obj if isinstance(owner, memoryview) else getattr(owner, "base", None)
        if base is None:
            return owner
        owner = base


def _in_one_buffer(params: dict) -> bool:
    """Whether every parameter with bytes is an aligned, contiguous view of one and the same
    allocation."""
    held = [v for v in params.values() if v.nbytes]
    return len({id(_root(v)) for v in held}) <= 1 and \
        all(v.ctypes.data % BUFFER_ALIGN == 0 and v.flags.c_contiguous for v in held)


def parameter_buffers(params: dict) -> dict[str, np.ndarray]:
    """name -> the array the kernels read: the parameters themselves where they already lie in one
    aligned buffer, else copies laid out in one new one (each on a BUFFER_ALIGN boundary, as
    writeable as its original)."""
    params = {k: np.asarray(v) for k, v in params.items()}
    if _in_one_buffer(params):
        return params
    sizes = {k: -(-v.nbytes // BUFFER_ALIGN) * BUFFER_ALIGN for k, v in params.items()}
    raw = np.empty(sum(sizes.values()) + BUFFER_ALIGN, np.uint8)
    offset = (-raw.ctypes.data) % BUFFER_ALIGN
    out = {}
    for k, v in params.items():
        if not v.nbytes:        # nothing for a kernel to read
            out[k] = v
            continue
        view = raw[offset:offset + v.nbytes].view(v.dtype).reshape(v.shape)
        view[...] = v
        view.flags.writeable = v.flags.writeable
        out[k] = view
        offset += sizes[k]
    return out
