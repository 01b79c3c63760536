"""The hand-scheduled VDLA programs that came before the compiler's VDLA backend: blocked
matmul and conv2d written directly against the runtime. They are no longer part of vdla;
benchmarks/vdla_ops.py runs them as the baseline the compiled kernels are measured against.
"""
from .conv2d import Conv2dShape, conv2d_program, conv2d_reference, run_conv2d
from .matmul import MatmulShape, matmul_program, matmul_reference, run_matmul
from .pipeline import emit_pipelined
from .requant import Requant, emit_requant, requant_reference

__all__ = ["Conv2dShape", "conv2d_program", "conv2d_reference", "run_conv2d",
           "MatmulShape", "matmul_program",
           "matmul_reference", "run_matmul", "emit_pipelined", "Requant", "emit_requant",
           "requant_reference"]
