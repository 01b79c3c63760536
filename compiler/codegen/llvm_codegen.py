"""Loop IR -> LLVM IR text (llvmlite.ir), for any LLVM CPU target.

A kernel follows vdla.driver.kernel_abi (entry, argument record, thread count); its buffers
are the PrimFunc params in order. Representation choices:
- scalar int32 values (indices, mostly) are computed as i64 (llvm_types.value_type); they are
  truncated where stored as int32;
- a `parallel` loop is outlined into a task over chunks of its iterations that the deploy
  runtime's persistent thread pool runs (parallel.py); with Target.threads == 1 (or too
  little work) parallel loops are plain loops and the object needs no runtime symbols;
- "local" buffers are stack arrays in the function's entry block (so LLVM can keep them in
  registers), "global" temporaries too up to STACK_TEMPORARY_BYTES (a softmax's row of
  exponentials, allocated in its row loop: a malloc and a free per row were a tenth of a ViT
  softmax's time on a Zen 3), larger ones are malloc'ed; other memory scopes are rejected.
"""
from __future__ import annotations

from llvmlite import ir

from vdla.driver import kernel_abi
from vdla.hw.errors import CompileError

from ..tir import dtype as dt
from ..tir.arith import skey
from ..tir import expr as E
from ..tir import stmt as S
from ..tir.functor import visit
from ..tir.tile_gemm import CALL as TILE_GEMM, TileGemm
from ..tir.prefetch import CALL as PREFETCH, INTRINSIC as PREFETCH_INTRINSIC
from . import amx, parallel
from .llvm_function import FunctionState
from .vector_math import FUNCTIONS as VECTOR_FUNCTIONS, vector_math
from .llvm_types import I1, I8, I32, I64, PTR, abi_function_type, abi_type, mangle, scalar_type, value_type

# "global" temporaries of at most this size live on the stack (a kernel holds a few at once)
STACK_TEMPORARY_BYTES = 16 * 1024

FAST = ("contract",)   # float multiply-adds may fuse; no other fast-math licence


class CodegenError(CompileError):
    pass


class LLVMCodegen:
    def __init__(self, target, module_name="vdla_kernels"):
        self.target = target
        self.module = ir.Module(name=module_name)
        self.module.triple = target.llvm_triple
        self.module.data_layout = str(target.target_machine().target_data)
        self.ptr_int = ir.IntType(target.pointer_bits)
        self.parallel_loops = 0    # outlined so far (their tasks are numbered)

    # -- helpers -----------------------------------------------------------------------
    def _extern(self, name, ret, args, var_arg=False):
        if name in self.module.globals:
            return self.module.globals[name]
        return ir.Function(self.module, ir.FunctionType(ret, args, var_arg=var_arg), name=name)

    def _intrinsic(self, base, types, ret=None, nargs=1):
        name = base + "." + ".".join(mangle(t) for t in types)
        if name in self.module.globals:
            return self.module.globals[name]
        t = types[0]
        return ir.Function(self.module, ir.FunctionType(ret or t, [t] * nargs), name=name)

    # -- kernels -----------------------------------------------------------------------
    def add_kernel(self, func: S.PrimFunc):
        name = func.name
        threads_t = abi_type(kernel_abi.NUM_THREADS_TYPE)
        nthreads = ir.GlobalVariable(self.module, threads_t, name=kernel_abi.num_threads_symbol(name))
        nthreads.initializer = ir.Constant(threads_t, kernel_abi.num_threads(self.target.threads))
        self.num_threads = nthreads   # of the kernel being written: its parallel loops read it
        specs = kernel_abi.encode_argspec((b.shape, b.dtype) for b in func.params)
        spec = ir.GlobalVariable(self.module, ir.ArrayType(I8, len(specs)), name=kernel_abi.argspec_symbol(name))
        spec.initializer = ir.Constant(ir.ArrayType(I8, len(specs)), bytearray(specs))
        spec.global_constant = True

        fn = ir.Function(self.module, abi_function_type(kernel_abi.KERNEL_SIGNATURE), name=name)
        fn.args[0].name = "buffers"
        st = FunctionState(fn)
        b = st.b
        for k, buf in enumerate(func.params):
            p = b.load(b.gep(fn.args[0], [ir.Constant(I64, k)], inbounds=True, source_etype=PTR),
                       typ=PTR, name=buf.name.replace(".", "_"))
            st.bufs[buf] = p
        self.stmt(st, func.body)
        b.ret(ir.Constant(fn.function_type.return_type, kernel_abi.KERNEL_OK))
        return fn

    # -- statements --------------------------------------------------------------------
    def stmt(self, st, s):
        b = st.b
        if isinstance(s, S.SeqStmt):
            for c in s.seq:
                self.stmt(st, c)
        elif isinstance(s, S.For):
            if s.kind is S.ForKind.PARALLEL and parallel.worth_threads(st, s, self.target.threads):
                parallel.emit_parallel_for(self, st, s)
            else:
                self.serial_for(st, s)
        elif isinstance(s, S.IfThenElse):
            cond = self.expr(st, s.cond)
            if s.else_case is None:
                with b.if_then(cond):
                    self.stmt(st, s.then_case)
            else:
                with b.if_else(cond) as (then, other):
                    with then:
                        self.stmt(st, s.then_case)
                    with other:
                        self.stmt(st, s.else_case)
        elif isinstance(s, S.BufferStore):
            self.store(st, s)
        elif isinstance(s, S.Allocate):
            self.allocate(st, s)
        elif isinstance(s, S.Evaluate):
            self.expr(st, s.value)
        elif isinstance(s, S.AttrStmt):
            self.stmt(st, s.body)
        elif isinstance(s, S.IntrinsicStmt):
            raise CodegenError(f"intrinsic {s.intrin_name} has no CPU lowering; it belongs to an "
                               "accelerator backend")
        else:
            raise CodegenError(f"cannot generate code for {type(s).__name__}")

    def serial_for(self, st, s, lo=None, hi=None):
        b = st.b
        lo = lo if lo is not None else self.as_i64(st, s.min)
        if hi is None:
            hi = b.add(lo, self.as_i64(st, s.extent)) if not E.is_const(s.min, 0) else self.as_i64(st, s.extent)
        pre = b.block
        header = b.append_basic_block(f"for_{s.var.name}")
        body = b.append_basic_block(f"body_{s.var.name}")
        done = b.append_basic_block(f"done_{s.var.name}")
        b.branch(header)
        b.position_at_end(header)
        iv = b.phi(I64, name=s.var.name.replace(".", "_"))
        iv.add_incoming(lo, pre)
        b.cbranch(b.icmp_signed("<", iv, hi), body, done)
        b.position_at_end(body)
        st.vars[s.var] = iv
        self.stmt(st, s.body)
        nxt = b.add(iv, ir.Constant(I64, 1))
        iv.add_incoming(nxt, b.block)
        b.branch(header)
        b.position_at_end(done)

    def allocate(self, st, s):
        buf = s.buffer
        n = buf.size()
        elem = scalar_type(buf.dtype)
        if buf.scope == "local":
            st.bufs[buf] = st.entry_alloca(ir.ArrayType(elem, n), buf.name.replace(".", "_"), align=64)
            self.stmt(st, s.body)
        elif buf.scope == "global" and n * dt.itemsize(buf.dtype) <= STACK_TEMPORARY_BYTES:
            st.bufs[buf] = st.entry_alloca(ir.ArrayType(elem, n), buf.name.replace(".", "_"), align=64)
            self.stmt(st, s.body)
        elif buf.scope == "global":
            malloc = self._extern("malloc", PTR, [self.ptr_int])
            free = self._extern("free", ir.VoidType(), [PTR])
            nbytes = max(1, n * dt.itemsize(buf.dtype))
            p = st.b.call(malloc, [ir.Constant(self.ptr_int, nbytes)], name=buf.name.replace(".", "_"))
            st.bufs[buf] = p
            self.stmt(st, s.body)
            st.b.call(free, [p])
        else:
            raise CodegenError(f"buffer {buf.name} is in memory scope {buf.scope!r}, which a CPU "
                               "cannot address; use 'global' or 'local', or compile this kernel "
                               "for the accelerator target")

    # -- memory ------------------------------------------------------------------------
    def _addr(self, st, buf, index):
        if buf not in st.bufs:
            raise CodegenError(f"buffer {buf.name} is used outside its allocation")
        return st.b.gep(st.bufs[buf], [index], inbounds=True, source_etype=scalar_type(buf.dtype))

    def load(self, st, e):
        """A load; under a select's condition (st.guards) it must not touch memory the
        condition excludes (padding reads outside the tensor): contiguous vectors become
        masked loads, other addresses are clamped into the buffer."""
        b = st.b
        buf, idx = e.buffer, e.indices[0]
        elem = scalar_type(buf.dtype)
        esize = max(1, dt.bits(buf.dtype) // 8)
        guards = _guards_of(st, e)
        guarded = bool(guards)
        if isinstance(idx, E.Ramp) and E.is_const(idx.stride, 1):
            p = self._addr(st, buf, self.as_i64(st, idx.base))
            # a bool is a byte in memory, but <N x i1> would be N bits: load bytes, then narrow
            packed = _bytes_of_bools(elem, idx.lanes)
            vt = packed or ir.VectorType(elem, idx.lanes)
            if guarded:
                mask = self._guard_mask(st, guards, idx.lanes)
                fn = self._masked_load(vt)
                v = b.call(fn, [p, ir.Constant(I32, esize), mask, ir.Constant(vt, ir.Undefined)])
            else:
                v = b.load(p, typ=vt, align=esize)
            if packed:
                v = b.trunc(v, ir.VectorType(I1, idx.lanes))
            return self.widen(st, v, e.dtype)
        if dt.lanes(idx.dtype) > 1:
            vidx = self.expr(st, idx)
            out = ir.Constant(ir.VectorType(elem, dt.lanes(idx.dtype)), ir.Undefined)
            for k in range(dt.lanes(idx.dtype)):
                i = b.extract_element(vidx, ir.Constant(I32, k))
                if i.type.width < 64:
                    i = b.sext(i, I64)
                if guarded:
                    i = self._clamp(st, i, buf)
                out = b.insert_element(out, b.load(self._addr(st, buf, i), typ=elem), ir.Constant(I32, k))
            return self.widen(st, out, e.dtype)
        i = self.as_i64(st, idx)
        if guarded:
            i = self._clamp(st, i, buf)
        return self.widen(st, b.load(self._addr(st, buf, i), typ=elem, align=esize), e.dtype)

    def _clamp(self, st, i, buf):
        b = st.b
        hi = ir.Constant(I64, max(0, buf.size() - 1))
        i = b.select(b.icmp_signed("<", i, ir.Constant(I64, 0)), ir.Constant(I64, 0), i)
        return b.select(b.icmp_signed(">", i, hi), hi, i)

    def _guard_mask(self, st, guards, lanes):
        b = st.b
        mask = None
        for g in guards:
            if not isinstance(g.type, ir.VectorType):
                vt = ir.VectorType(I1, lanes)
                g = b.shuffle_vector(b.insert_element(ir.Constant(vt, ir.Undefined), g, ir.Constant(I32, 0)),
                                     ir.Constant(vt, ir.Undefined), ir.Constant(ir.VectorType(I32, lanes), [0] * lanes))
            elif g.type.count != lanes:
                continue
            mask = g if mask is None else b.and_(mask, g)
        if mask is None:
            mask = ir.Constant(ir.VectorType(I1, lanes), [1] * lanes)
        return mask

    def _masked_load(self, vt):
        name = f"llvm.masked.load.{mangle(vt)}.p0"
        if name in self.module.globals:
            return self.module.globals[name]
        return ir.Function(self.module, ir.FunctionType(vt, [PTR, I32, ir.VectorType(I1, vt.count), vt]), name=name)

    def store(self, st, s):
        b = st.b
        buf, idx = s.buffer, s.indices[0]
        esize = max(1, dt.bits(buf.dtype) // 8)
        val = self.narrow(st, self.expr(st, s.value), buf.dtype)
        if isinstance(idx, E.Ramp) and E.is_const(idx.stride, 1):
            packed = _bytes_of_bools(scalar_type(buf.dtype), idx.lanes)
            if packed:     # N bools are N bytes in memory (see load)
                val = b.zext(val, packed)
            b.store(val, self._addr(st, buf, self.as_i64(st, idx.base)), align=esize)
            return
        if dt.lanes(idx.dtype) > 1:
            vidx = self.expr(st, idx)
            for k in range(dt.lanes(idx.dtype)):
                i = b.extract_element(vidx, ir.Constant(I32, k))
                if i.type.width < 64:
                    i = b.sext(i, I64)
                b.store(b.extract_element(val, ir.Constant(I32, k)), self._addr(st, buf, i))
            return
        b.store(val, self._addr(st, buf, self.as_i64(st, idx)), align=esize)

    def widen(self, st, v, d):
        """Memory representation -> value representation (int32 scalars become i64)."""
        if dt.lanes(d) == 1 and dt.scalar(d) == "int32":
            return st.b.sext(v, I64)
        return v

    def narrow(self, st, v, d):
        t = scalar_type(d)
        if isinstance(v.type, ir.IntType) and isinstance(t, ir.IntType) and v.type.width > t.width:
            return st.b.trunc(v, t)
        return v

    def as_i64(self, st, e):
        v = self.expr(st, e)
        if v.type == I64:
            return v
        return st.b.sext(v, I64) if dt.is_signed(e.dtype) else st.b.zext(v, I64)

    # -- expressions -------------------------------------------------------------------
    def expr(self, st, e):
        b = st.b
        if isinstance(e, E.Const):
            t = value_type(e.dtype)
            if dt.is_bool(e.dtype):
                return ir.Constant(t, int(bool(e.value)))
            return ir.Constant(t, e.value)
        if isinstance(e, E.Var):
            if e not in st.vars:
                raise CodegenError(f"variable {e.name} is used outside the loop that defines it")
            return st.vars[e]
        if isinstance(e, E.BufferLoad):
            return self.load(st, e)
        if isinstance(e, E.Broadcast):
            v = self.expr(st, e.value)
            t = ir.VectorType(scalar_type(e.value.dtype), e.lanes)
            v = self.narrow(st, v, e.value.dtype)
            vec = b.insert_element(ir.Constant(t, ir.Undefined), v, ir.Constant(I32, 0))
            return b.shuffle_vector(vec, ir.Constant(t, ir.Undefined),
                                    ir.Constant(ir.VectorType(I32, e.lanes), [0] * e.lanes))
        if isinstance(e, E.Ramp):
            base = self.expr(st, E.Broadcast(e.base, e.lanes))
            stride = e.stride
            if not isinstance(stride, E.Const):
                raise CodegenError("ramp with a symbolic stride")
            et = scalar_type(e.base.dtype)
            offs = ir.Constant(ir.VectorType(et, e.lanes), [k * stride.value for k in range(e.lanes)])
            return b.add(base, offs)
        if isinstance(e, E.BinaryOp):
            return self.binary(st, e)
        if isinstance(e, E.Not):
            return b.not_(self.expr(st, e.a))
        if isinstance(e, E.Select):
            cond = self.expr(st, e.cond)
            if not _has_load(e.t) and not _has_load(e.f):
                return b.select(cond, self.expr(st, e.t), self.expr(st, e.f))
            st.guards.append(cond)
            st.guard_reads.append(_unselected_load_keys(e.cond))
            t = self.expr(st, e.t)
            st.guards[-1] = b.not_(cond)
            f = self.expr(st, e.f)
            st.guards.pop()
            st.guard_reads.pop()
            return b.select(cond, t, f)
        if isinstance(e, E.Cast):
            return self.cast(st, e)
        if isinstance(e, E.Call):
            return self.call(st, e)
        raise CodegenError(f"cannot generate code for expression {type(e).__name__}: {e!r} "
                           "(was the kernel lowered and flattened?)")

    def binary(self, st, e):
        b = st.b
        a, c = self.expr(st, e.a), self.expr(st, e.b)
        d = e.a.dtype
        if isinstance(e, E.CmpOp):
            op = e.symbol
            if dt.is_float(d):
                return b.fcmp_ordered(op, a, c)
            if dt.is_signed(d):
                return b.icmp_signed(op, a, c)
            return b.icmp_unsigned(op, a, c)
        if isinstance(e, E.And):
            return b.and_(a, c)
        if isinstance(e, E.Or):
            return b.or_(a, c)
        if dt.is_float(d):
            if isinstance(e, E.Add):
                return b.fadd(a, c, flags=FAST)
            if isinstance(e, E.Sub):
                return b.fsub(a, c, flags=FAST)
            if isinstance(e, E.Mul):
                return b.fmul(a, c, flags=FAST)
            if isinstance(e, E.Div):
                return b.fdiv(a, c)
            if isinstance(e, (E.Min, E.Max)):
                # NaN in either operand is the result, as numpy's minimum/maximum (the host ops)
                # and onnxruntime's Relu give: a compare alone would answer the other operand
                wins = b.fcmp_ordered("<" if isinstance(e, E.Min) else ">", a, c)
                return b.select(b.or_(wins, b.fcmp_unordered("uno", a, a)), a, c)
            if isinstance(e, E.FloorDiv):
                return self.call_intrinsic(st, "llvm.floor", [b.fdiv(a, c)])
            if isinstance(e, E.FloorMod):
                q = self.call_intrinsic(st, "llvm.floor", [b.fdiv(a, c)])
                return b.fsub(a, b.fmul(q, c))
        signed = dt.is_signed(d)
        if isinstance(e, E.Add):
            return b.add(a, c)
        if isinstance(e, E.Sub):
            return b.sub(a, c)
        if isinstance(e, E.Mul):
            return b.mul(a, c)
        if isinstance(e, E.Min):
            return b.select(b.icmp_signed("<", a, c) if signed else b.icmp_unsigned("<", a, c), a, c)
        if isinstance(e, E.Max):
            return b.select(b.icmp_signed(">", a, c) if signed else b.icmp_unsigned(">", a, c), a, c)
        if isinstance(e, (E.FloorDiv, E.FloorMod)):
            if not signed:
                return b.udiv(a, c) if isinstance(e, E.FloorDiv) else b.urem(a, c)
            zero = ir.Constant(a.type, 0) if not isinstance(a.type, ir.VectorType) else \
                ir.Constant(a.type, [0] * a.type.count)
            q, r = b.sdiv(a, c), b.srem(a, c)
            # floor semantics: adjust when the remainder's sign differs from the divisor's
            adjust = b.and_(b.icmp_signed("!=", r, zero),
                            b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", c, zero)))
            if isinstance(e, E.FloorDiv):
                one = ir.Constant(a.type, 1) if not isinstance(a.type, ir.VectorType) else \
                    ir.Constant(a.type, [1] * a.type.count)
                return b.select(adjust, b.sub(q, one), q)
            return b.select(adjust, b.add(r, c), r)
        raise CodegenError(f"unsupported operator {type(e).__name__} on {d}")

    def cast(self, st, e):
        b = st.b
        v = self.expr(st, e.value)
        src, dst = e.value.dtype, e.dtype
        tt = value_type(dst)
        if v.type == tt:
            return v
        if dt.is_bool(dst):
            zero = ir.Constant(v.type, 0 if not isinstance(v.type, ir.VectorType) else [0] * v.type.count)
            return b.fcmp_unordered("!=", v, zero) if dt.is_float(src) else b.icmp_unsigned("!=", v, zero)
        if dt.is_float(src) and dt.is_float(dst):
            return b.fpext(v, tt) if dt.bits(dst) > dt.bits(src) else b.fptrunc(v, tt)
        if dt.is_float(src):
            return b.fptosi(v, tt) if dt.is_signed(dst) else b.fptoui(v, tt)
        if dt.is_float(dst):
            return b.sitofp(v, tt) if dt.is_signed(src) else b.uitofp(v, tt)
        sw = v.type.element.width if isinstance(v.type, ir.VectorType) else v.type.width
        tw = tt.element.width if isinstance(tt, ir.VectorType) else tt.width
        if tw < sw:
            return b.trunc(v, tt)
        return b.sext(v, tt) if dt.is_signed(src) else b.zext(v, tt)

    def call_intrinsic(self, st, name, args):
        fn = self._intrinsic(name, [args[0].type], nargs=len(args))
        return st.b.call(fn, args)

    def call(self, st, e):
        b = st.b
        if e.name == TILE_GEMM:      # a tile GEMM on the operands' addresses (not their values)
            ptrs = [self._addr(st, x.buffer, self.as_i64(st, x.indices[0])) for x in e.args[:3]]
            b.call(amx.tile_gemm_function(self.module, TileGemm.decode(x.value for x in e.args[3:])), ptrs)
            return ir.Constant(I64, 0)
        if e.name == PREFETCH:       # a cache hint at the operand's address; never faults
            x, locality = e.args
            ptr = self._addr(st, x.buffer, self.as_i64(st, x.indices[0]))
            if PREFETCH_INTRINSIC not in self.module.globals:
                ir.Function(self.module, ir.FunctionType(ir.VoidType(), [ptr.type, I32, I32, I32]),
                            name=PREFETCH_INTRINSIC)
            # read (0), the given locality (3: all levels ... 1: the outer caches), data cache (1)
            b.call(self.module.globals[PREFETCH_INTRINSIC],
                   [ptr, ir.Constant(I32, 0), ir.Constant(I32, int(locality.value)), ir.Constant(I32, 1)])
            return ir.Constant(I64, 0)
        args = [self.expr(st, a) for a in e.args]
        simple = {"exp": "llvm.exp", "exp_nonpositive": "llvm.exp", "log": "llvm.log", "sqrt": "llvm.sqrt",
                  "fabs": "llvm.fabs",
                  # rint rounds half to even in the default rounding mode, which nothing changes;
                  # llvm.roundeven would call roundevenf on ARMv7, which its glibc (2.17) lacks
                  "floor": "llvm.floor", "ceil": "llvm.ceil", "round": "llvm.rint",
                  "fma": "llvm.fma", "pow": "llvm.pow", "tanh": "llvm.tanh"}
        if e.name == "reinterpret":     # same bits, another type (e.g. 4 x int8 -> int32)
            v = b.bitcast(args[0], scalar_type(e.dtype) if dt.lanes(e.dtype) == 1 else value_type(e.dtype))
            return self.widen(st, v, e.dtype)
        if e.name.startswith("llvm."):  # a target instruction, called as its LLVM intrinsic
            args = [self.narrow(st, a, x.dtype) if dt.lanes(x.dtype) == 1 else a for a, x in zip(args, e.args)]
            ret = value_type(e.dtype)
            if e.name not in self.module.globals:
                ir.Function(self.module, ir.FunctionType(ret, [a.type for a in args]), name=e.name)
            return b.call(self.module.globals[e.name], args)
        if not dt.is_float(e.dtype):
            raise CodegenError(f"math function {e.name} needs a float argument, got {e.dtype}")
        if len(args) == 1 and e.name in VECTOR_FUNCTIONS:
            vec = vector_math(b, e.name, args[0], self._intrinsic)   # None: not a float vector
            if vec is not None:
                return vec
        if e.name in simple:
            return self.call_intrinsic(st, simple[e.name], args)
        if e.name == "sigmoid":
            t = args[0].type
            one = ir.Constant(t, 1.0 if not isinstance(t, ir.VectorType) else [1.0] * t.count)
            zero = ir.Constant(t, 0.0 if not isinstance(t, ir.VectorType) else [0.0] * t.count)
            neg = b.fsub(zero, args[0])
            ex = vector_math(b, "exp", neg, self._intrinsic)
            if ex is None:
                ex = self.call_intrinsic(st, "llvm.exp", [neg])
            return b.fdiv(one, b.fadd(one, ex))
        if e.name == "erf":
            return self._libm_lanes(st, "erff" if dt.bits(e.dtype) == 32 else "erf", args[0], e.dtype)
        raise CodegenError(f"unknown math function {e.name}")

    def _libm_lanes(self, st, name, v, d):
        b = st.b
        et = scalar_type(d)
        fn = self._extern(name, et, [et])
        if not isinstance(v.type, ir.VectorType):
            return b.call(fn, [v])
        out = ir.Constant(v.type, ir.Undefined)
        for k in range(v.type.count):
            out = b.insert_element(out, b.call(fn, [b.extract_element(v, ir.Constant(I32, k))]),
                                   ir.Constant(I32, k))
        return out


def _bytes_of_bools(elem, lanes: int):
    """<lanes x i8>, the memory form of a vector of bools; None for any other element type."""
    return ir.VectorType(ir.IntType(8), lanes) if elem == I1 else None


def _has_load(e) -> bool:
    found = []
    visit(e, lambda n: found.append(1) if isinstance(n, E.BufferLoad) else None)
    return bool(found)


def _unselected_load_keys(e) -> set:
    """The loads (tir.arith.skey) that evaluating `e` always makes: those outside the branches
    of its own selects, which read only under their conditions."""
    found = set()

    def rec(n):
        if isinstance(n, E.BufferLoad):
            found.add(skey(n))
        for _, c in ([("cond", n.cond)] if isinstance(n, E.Select) else n.children()):
            for x in (c if isinstance(c, tuple) else (c,)):
                if isinstance(x, E.Node):
                    rec(x)
    rec(e)
    return found


def _guards_of(st, load):
    """The select conditions a load must respect: all of st.guards, but where a guard's own
    condition read the same address (select(x[i] > m, x[i], m), a NaN-ignoring max) only the
    guards around that condition: under them the address is known to be readable."""
    key = skey(load) if st.guards else None
    for k, reads in enumerate(st.guard_reads):
        if key in reads:
            return st.guards[:k]
    return st.guards

