"""What the deploy runtime knows of an accelerator op: its graph name and its numpy int8
semantics. The name is stated here once per op (in the op's own module); the compiler's record
of the op (vdla.compiler.vdla.ops) reads it from this record, so the runtime, which must run a
quantized graph without the compiler, and the compiler agree on it by construction."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class VdlaSemantics:
    name: str                  # the graph op, e.g. "VdlaConv"
    run: Callable              # (inputs, attrs) -> [outputs], bit for bit what the kernel computes
    kernel: bool = True        # an accelerator kernel; False: a conversion at the accelerator's edge
    finite_input: bool = False  # its first input must be finite (no int8 code for NaN or ±inf):
                                # checked before a CPU kernel of it runs, as its numpy form checks
