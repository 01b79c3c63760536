"""How big a tensor and the activation arena may be, and the check every inferred type passes.

A shape is checked where it is made (graph inputs at import, node outputs in shape inference),
so an impossible model is rejected at compile time naming the tensor, not at run time with a
failed allocation or an arena size that wrapped around.
"""
from __future__ import annotations

from .ir import InvalidModelError, TensorType, UnsupportedModelError

# CPU kernels index tensors with 32-bit signed loop variables (the loop IR's default integer type),
# so a tensor of 2^31 elements or more would be addressed wrongly.
MAX_TENSOR_ELEMENTS = 2**31 - 1
# Every activation lives in one arena; 4 GiB is all a 32-bit board CPU (PYNQ's Cortex-A9) can
# address, and far beyond the models an edge accelerator runs.
MAX_ARENA_BYTES = 2**32


# The element types vdla computes with (numpy dtype names); bfloat16, the float8 and 4-bit
# types and strings are not among them.
SUPPORTED_DTYPES = frozenset({"float16", "float32", "float64", "int8", "uint8", "int16", "uint16", "int32",
                              "uint32", "int64", "uint64", "bool"})


def check_tensor(owner: str, name: str, ttype: TensorType) -> None:
    """`owner` says where the tensor comes from ("node 'conv1' (Conv)", "graph input")."""
    if ttype.dtype not in SUPPORTED_DTYPES:
        raise UnsupportedModelError(f"{owner}: tensor {name!r} would be {ttype.dtype}; vdla computes with "
                                    f"{', '.join(sorted(SUPPORTED_DTYPES))}")
    if any(d < 0 for d in ttype.shape):
        raise InvalidModelError(f"{owner}: tensor {name!r} would have shape {list(ttype.shape)}; dimensions "
                                "must not be negative")
    if ttype.size > MAX_TENSOR_ELEMENTS:
        raise UnsupportedModelError(f"{owner}: tensor {name!r} {ttype} has {ttype.size} elements; vdla's limit "
                                    f"is {MAX_TENSOR_ELEMENTS} (2^31 - 1) per tensor")
    if ttype.nbytes > MAX_ARENA_BYTES:
        raise UnsupportedModelError(f"{owner}: tensor {name!r} {ttype} takes {ttype.nbytes} bytes, more than the "
                                    f"{MAX_ARENA_BYTES} bytes (4 GiB) all activations may take together")
