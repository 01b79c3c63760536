"""The loop IR: expressions, statements, buffers, simplifier, printer, verifier and passes."""
from . import dtype
from .expr import (Expr, Var, Const, const, Add, Sub, Mul, Div, FloorDiv, FloorMod, Min, Max,
                   LT, LE, GT, GE, EQ, NE, And, Or, Not, Select, Cast, Call, TensorRead,
                   BufferLoad, Reduce, Ramp, Broadcast, cast, to_expr)
from .stmt import (Buffer, ForKind, Stmt, For, SeqStmt, IfThenElse, BufferStore, Allocate,
                   Evaluate, AttrStmt, IntrinsicStmt, PrimFunc, seq)
from .printer import to_text
from .arith import simplify, bounds, prove, structural_equal
from .functor import visit, transform, substitute, free_vars
