"""Hand-scheduled VDLA programs on the runtime: blocked matmul and conv2d (with 1 or 2
virtual threads), requantization, the SPEC §7 layouts and their numpy oracles.

Used by the tests, benchmarks/latency_hiding.py, `vdla demo` and the RTL equivalence tests.
"""
from .conv2d import Conv2dShape, conv2d_program, conv2d_reference, run_conv2d
from .layout import (pack_activation, pack_conv_weight, pack_matrix_lhs, pack_matrix_rhs,
                     unpack_activation, unpack_matrix)
from .matmul import MatmulShape, matmul_program, matmul_reference, run_matmul
from .pipeline import emit_pipelined
from .requant import Requant, emit_requant, requant_reference

__all__ = ["Conv2dShape", "conv2d_program", "conv2d_reference", "run_conv2d",
           "pack_activation", "pack_conv_weight", "pack_matrix_lhs", "pack_matrix_rhs",
           "unpack_activation", "unpack_matrix", "MatmulShape", "matmul_program",
           "matmul_reference", "run_matmul", "emit_pipelined", "Requant", "emit_requant",
           "requant_reference"]
