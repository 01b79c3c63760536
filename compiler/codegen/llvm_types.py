"""The LLVM types kernels are written in: how each loop-IR dtype is stored and computed, and
the kernel ABI's C types (vdla.driver.kernel_abi spells them as LLVM does)."""
from __future__ import annotations

import llvmlite.ir.types
from llvmlite import ir

from ..tir import dtype as dt

# LLVM >= 17 only reads opaque pointers ("ptr"); make llvmlite print every pointer that way.
llvmlite.ir.types.ir_layer_typed_pointers_enabled = False

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
_ABI = {"void": ir.VoidType(), "i32": I32, "i64": I64, "ptr": PTR}


def abi_type(spelling: str):
    return _ABI[spelling]


def abi_function_type(signature) -> ir.FunctionType:
    """The LLVM type of a kernel_abi signature (result, parameters)."""
    result, params = signature
    return ir.FunctionType(_ABI[result], [_ABI[t] for t in params])


def scalar_type(d: str):
    """The type a value of dtype d is stored in."""
    s = dt.scalar(d)
    if s == "float32":
        return ir.FloatType()
    if s == "float64":
        return ir.DoubleType()
    if s == "float16":
        return ir.HalfType()
    if s == "bool":
        return I1
    return ir.IntType(dt.bits(s))


def value_type(d: str):
    """The type a value of dtype d is computed in: scalar int32 widened to i64, so address
    arithmetic needs no sign extensions the optimizer cannot remove."""
    n = dt.lanes(d)
    if n == 1:
        return I64 if dt.scalar(d) == "int32" else scalar_type(d)
    return ir.VectorType(scalar_type(d), n)


def mangle(t) -> str:
    """A type's suffix in LLVM intrinsic names (llvm.fabs.v8f32)."""
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{mangle(t.element)}"
    if isinstance(t, ir.FloatType):
        return "f32"
    if isinstance(t, ir.DoubleType):
        return "f64"
    if isinstance(t, ir.HalfType):
        return "f16"
    return f"i{t.width}"
