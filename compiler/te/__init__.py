"""Tensor expressions: what an operator computes, independent of how (see schedule)."""
from .tensor import IterVar, Tensor, ComputeOp, PlaceholderOp, Operation
from .operation import (placeholder, compute, reduce_axis, sum, max, min, fmax, if_then_else, cast,
                        const, all, call, exp, log, sqrt, tanh, fabs, floor, round, maximum,
                        minimum)
from ..tir.expr import Var, Expr

__all__ = ["IterVar", "Tensor", "ComputeOp", "PlaceholderOp", "Operation", "placeholder",
           "compute", "reduce_axis", "sum", "max", "min", "fmax", "if_then_else", "cast", "const",
           "all", "call", "exp", "log", "sqrt", "tanh", "fabs", "floor", "round", "maximum",
           "minimum", "Var", "Expr"]
