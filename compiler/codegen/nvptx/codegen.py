"""Loop IR in launch form -> LLVM IR for NVPTX: LLVMCodegen with a GPU flavour.

What differs from a CPU kernel, and nothing else:
- a kernel is `ptx_kernel void NAME(ptr addrspace(1) buf, ...)`: one global-memory pointer per
  parameter buffer, launched with its grid and block (no argument record, no thread pool);
- the launch nest is not loops: each launch variable is the thread's special register
  (llvm.nvvm.read.ptx.sreg.ctaid.* for blockIdx, .tid.* for threadIdx), read once at entry;
- "shared" buffers are module globals in address space 3, one per buffer (static shared
  memory); "local" buffers are allocas, which NVPTX places in the thread's local memory (address
  space 5) or registers -- an alloca must stay generic in the IR, the backend's
  nvptx-lower-alloca pass moves it; global buffers cannot be allocated in device code;
- a barrier is llvm.nvvm.barrier0 (bar.sync 0);
- math: exp, log, tanh, sigmoid, erf and pow are math.py's formulas over ex2.approx.f32 and
  lg2.approx.f32 (LLVM would abort the process on llvm.exp for NVPTX); sqrt, fabs, floor, ceil,
  round and fma are LLVM intrinsics NVPTX lowers to instructions; anything else is refused.
"""
from __future__ import annotations

import re

from llvmlite import ir

from ...tir import dtype as dt
from ...tir import gpu as G
from ...tir import stmt as S
from ..llvm_codegen import CodegenError, LLVMCodegen
from ..llvm_function import FunctionState
from ..llvm_types import I32, I64, scalar_type
from . import math as gpu_math
from .llvm_math import F32, LLVMMath

GLOBAL, SHARED = 1, 3   # NVPTX address spaces
GLOBAL_PTR, SHARED_PTR = ir.PointerType(addrspace=GLOBAL), ir.PointerType(addrspace=SHARED)
SREG = {"blockIdx": "ctaid", "threadIdx": "tid"}
APPROX = {"exp2", "log2"}                # ex2.approx.f32, lg2.approx.f32
NATIVE = {"sqrt", "fabs", "floor", "ceil", "round", "fma", "reinterpret"}   # LLVM intrinsics NVPTX lowers


class NVPTXCodegen(LLVMCodegen):
    def add_kernel(self, kernel):
        """kernel: a GpuKernel whose function was flattened (flatten_buffers)."""
        func = kernel.func
        fn = ir.Function(self.module, ir.FunctionType(ir.VoidType(), [GLOBAL_PTR] * len(func.params)),
                         name=func.name)
        fn.calling_convention = "ptx_kernel"
        st = FunctionState(fn)
        for arg, buf in zip(fn.args, func.params):
            arg.name = _ident(buf.name)
            st.bufs[buf] = arg
        s = func.body
        while G.thread_tag(s) is not None:
            st.vars[s.var] = self._special_register(st, G.thread_tag(s))
            s = s.body
        self._kernel = func.name
        self.stmt(st, s)
        st.b.ret_void()
        return fn

    def _special_register(self, st, tag):
        kind, dim = tag.split(".")
        name = f"llvm.nvvm.read.ptx.sreg.{SREG[kind]}.{dim}"
        fn = self.module.globals.get(name) or ir.Function(self.module, ir.FunctionType(I32, []), name=name)
        return st.b.zext(st.b.call(fn, []), I64, name=tag.replace(".", "_"))

    def stmt(self, st, s):
        if isinstance(s, S.For) and G.thread_tag(s) is not None:
            raise CodegenError(f"kernel {self._kernel}: loop {s.var.name} is bound to {G.thread_tag(s)} inside the "
                               "kernel's code; a kernel must be in launch form (schedule.gpu.split_kernels)")
        if isinstance(s, S.IntrinsicStmt):
            raise CodegenError(f"kernel {self._kernel}: intrinsic {s.intrin_name} has no GPU lowering")
        return super().stmt(st, s)

    def allocate(self, st, s):
        buf = s.buffer
        elem = scalar_type(buf.dtype)
        arr = ir.ArrayType(elem, max(1, buf.size()))
        if buf.scope == "shared":
            g = ir.GlobalVariable(self.module, arr, name=_ident(f"{self._kernel}__{buf.name}"), addrspace=SHARED)
            g.linkage = "internal"
            g.initializer = ir.Constant(arr, ir.Undefined)   # shared memory cannot be initialized
            g.align = 16
            g.type = SHARED_PTR   # llvmlite types a global with a typed pointer
            st.bufs[buf] = g
        elif buf.scope == "local":
            st.bufs[buf] = st.entry_alloca(arr, _ident(buf.name), align=16)
        else:
            raise CodegenError(f"kernel {self._kernel}: buffer {buf.name} is in scope {buf.scope!r}; device code "
                               "allocates only 'shared' and 'local' buffers (global ones are the host's "
                               "temporaries, between kernels)")
        self.stmt(st, s.body)

    def call(self, st, e):
        b = st.b
        if e.name == G.BARRIER:
            return b.call(self._unary_fn("llvm.nvvm.barrier0", ir.VoidType(), []), [])
        if e.name in gpu_math.FORMULAS or e.name in APPROX:
            if e.dtype != "float32" or any(a.dtype != "float32" for a in e.args):
                raise CodegenError(f"kernel {self._kernel}: {e.name} on {e.dtype}; the GPU path computes "
                                   f"{e.name} in float32 only (its ex2/lg2 instructions are float32): cast to float32")
            m = LLVMMath(b, lambda name: self._unary_fn(name, F32, [F32]))
            args = [m.value(self.expr(st, a)) for a in e.args]
            if e.name in APPROX:
                return getattr(m, e.name)(*args).v
            return gpu_math.FORMULAS[e.name](m, *args).v
        if e.name in NATIVE or e.name.startswith("llvm."):
            if e.name != "reinterpret" and not e.name.startswith("llvm.") and not dt.is_float(e.dtype):
                raise CodegenError(f"kernel {self._kernel}: {e.name} needs a float argument, got {e.dtype}")
            return super().call(st, e)
        raise CodegenError(f"kernel {self._kernel}: math function {e.name} has no GPU lowering; the GPU path "
                           f"computes {', '.join(sorted(set(gpu_math.FORMULAS) | APPROX | NATIVE - {'reinterpret'}))}")

    def _unary_fn(self, name, ret, args):
        return self.module.globals.get(name) or ir.Function(self.module, ir.FunctionType(ret, args), name=name)


def _ident(name):
    """A PTX identifier: letters, digits, _ and $ only."""
    return re.sub(r"[^A-Za-z0-9_$]", "_", name)
