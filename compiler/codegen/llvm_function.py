"""The state of one LLVM function while the loop IR is written into it."""
from __future__ import annotations

from llvmlite import ir

from .llvm_types import PTR


class FunctionState:
    """Builder, the values of loop variables and buffers in scope, and the stack."""

    def __init__(self, func):
        # "allocas" holds only stack allocations (hoisted there so LLVM can promote them to
        # registers) and branches to "entry", where the code starts.
        self.entry = func.append_basic_block("allocas")
        body = func.append_basic_block("entry")
        ir.IRBuilder(self.entry).branch(body)
        self.func, self.b = func, ir.IRBuilder(body)
        self.vars = {}
        self.bufs = {}
        self.frees = []
        self.in_parallel = False
        self.guards = []   # select conditions the current expression is evaluated under
        self.guard_reads = []   # for each, the loads (tir.arith.skey) its condition made

    def entry_alloca(self, typ, name, align):
        """Stack storage of `typ` for the whole function, as an opaque pointer."""
        eb = ir.IRBuilder(self.entry)
        eb.position_before(self.entry.terminator)
        a = eb.alloca(typ, name=name)
        a.align = align
        a.type = PTR   # llvmlite types an alloca with a typed pointer
        return a
