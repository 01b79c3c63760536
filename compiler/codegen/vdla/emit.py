"""emit_program: loop IR made of DMA and micro-op nodes -> KernelProgram.

Static shapes make every loop's trip count known, so emission walks the loop IR once with
concrete loop values (virtual-thread leaves included, which interleaves the threads),
places accelerator buffers in their SRAMs (stacked per scope in allocation order, replicas
of a virtual thread side by side), and records one operation per instruction with the SRAM
ranges it reads and writes. resets.drop_cleared_resets leaves out the accumulator resets that
change nothing, tokens.insert_dependence_tokens then adds the push/pop pairs those ranges
require, and the calls become the program the runtime replays."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from vdla.hw import MemType, Uop
from vdla.hw.depthwise import TAPS as DEPTHWISE_TAPS
from vdla.hw.timing import dram_elem_bytes
from vdla.driver.runtime import KernelError, LoopLevel, Stage, UopKernel
from vdla.driver.runtime.program import KernelProgram, ProgramParam
from vdla.driver.runtime.program_calls import Alu, Call, Gemm, Load, Store

from ...intrin.vdla import ZERO_WRITE_DISTANCE
from ...tir import expr as E
from ...tir import stmt as S
from .affine import Affine, guard_atoms, valid_range
from .errors import VdlaLoweringError
from .storage import buffer_elems
from .nodes import SCOPE_MEM, sram_depth
from .resets import drop_cleared_resets
from .tokens import conflict, insert_dependence_tokens


@dataclass
class Op:
    stage: Stage
    call: Call
    reads: list = field(default_factory=list)    # [(memory, lo, hi)]
    writes: list = field(default_factory=list)


def emit_program(config, func) -> KernelProgram:
    em = _Emitter(config, func)
    em.stmt(func.body, {})
    em.flush_resets()
    ops = drop_cleared_resets(config, em.ops, em.kernels)
    params = []
    for i, b in enumerate(func.params):
        params.append(ProgramParam(b.name, b.size() * np.dtype(b.dtype).itemsize, em.param_elem.get(i, 1)))
    calls = insert_dependence_tokens(ops)
    return KernelProgram(func.name, config.hash, params, _used(em.kernels, calls), calls)


def _used(kernels: list, calls: list) -> list:
    """The kernels some call runs, numbered anew in order (a dropped reset leaves its kernel)."""
    index = {}
    for c in calls:
        if isinstance(c, (Gemm, Alu)):
            index.setdefault(c.kernel, len(index))
    for k, c in enumerate(calls):
        if isinstance(c, (Gemm, Alu)):
            calls[k] = type(c)(index[c.kernel])
    return [kernels[old] for old, _ in sorted(index.items(), key=lambda kv: kv[1])]


def _window_row(window, flat) -> tuple:
    """(dst, src, wgt) of a DEPTHWISE row's micro-ops, one per input pixel: TAPS - 1 that fill
    the window (their dst, never written, the row's first output), then at stride 1 one per
    output. At stride 2 micro-op 2j + TAPS - 1 writes output j, and each one between two
    outputs (a window no output wants) reads the zero tile and adds its zeros to the output
    whose own write lies ZERO_WRITE_DISTANCE micro-ops after it (j + 2 of the window's j), or
    for the last one, with no such output, before it (j - 1): writes to one accumulator stay
    that far apart, which a row of two outputs cannot (plan.conv_knob_problem)."""
    width, src_step, dst_step, stride, zero_step = window
    (first_dst,), (first_src,), (tile,) = flat["dst"], flat["src"], flat["wgt"]
    u = np.arange(stride * (width - 1) + DEPTHWISE_TAPS, dtype=np.int64)
    s = np.maximum(u - (DEPTHWISE_TAPS - 1), 0)          # the window's first pixel
    output = s // stride
    wgt = np.full(u.size, tile, dtype=np.int64)
    if stride == 2:
        skipped = s % 2 == 1          # the window at 2j + 1, written at micro-op 2j + TAPS
        ahead, behind = output + (ZERO_WRITE_DISTANCE + 1) // 2, output - (ZERO_WRITE_DISTANCE - 1) // 2
        output = np.where(skipped, np.where(ahead < width, ahead, behind), output)
        wgt[skipped] += zero_step
    return first_dst + output * dst_step, first_src + u * src_step, wgt


def _const(e, env, what):
    if isinstance(e, E.Const):
        return int(e.value)
    return Affine.of(e, what).value(env)


class _Emitter:
    def __init__(self, config, func):
        self.config = config
        self.func = func
        self.params = {id(b): i for i, b in enumerate(func.params)}
        self.param_elem = {}
        self.top = {s: 0 for s in SCOPE_MEM}
        self.place = {}          # Buffer -> (base, elems, thread var or None)
        self.replicas = {}       # Buffer -> (thread var, count)
        self.ops: list[Op] = []
        self.pending_resets: list[Op] = []
        self.kernels: list[UopKernel] = []
        self._kernel_index = {}
        self._made = {}             # _uop_kernel's key of a kernel made -> its index

    # ---- the operation list ------------------------------------------------------------------
    def add(self, op: Op, reset: bool = False):
        """Append op. An accumulator reset is held back until the first operation that touches
        its accumulators: in between, compute can work for the other virtual thread while
        the store module drains this thread's previous tile (which the reset must wait for)."""
        keep = []
        for r in self.pending_resets:
            if conflict(op, r):
                self.ops.append(r)
            else:
                keep.append(r)
        self.pending_resets = keep
        (self.pending_resets if reset else self.ops).append(op)

    def flush_resets(self):
        self.ops += self.pending_resets
        self.pending_resets = []

    # ---- statements -------------------------------------------------------------------------
    def stmt(self, s, env):
        if isinstance(s, S.SeqStmt):
            for c in s.seq:
                self.stmt(c, env)
        elif isinstance(s, S.For):
            lo = _const(s.min, env, f"loop {s.var.name}")
            n = _const(s.extent, env, f"loop {s.var.name}")
            for i in range(lo, lo + n):
                self.stmt(s.body, {**env, s.var: i})
        elif isinstance(s, S.AttrStmt):
            if s.key == "vdla.replicate":
                self.replicas[s.node] = s.value
            self.stmt(s.body, env)
        elif isinstance(s, S.Allocate):
            self.allocate(s, env)
        elif isinstance(s, S.IfThenElse):
            atoms = guard_atoms(s.cond, "if")
            if all(a.value(env) >= 0 for a in atoms):
                self.stmt(s.then_case, env)
            elif s.else_case is not None:
                self.stmt(s.else_case, env)
        elif isinstance(s, S.IntrinsicStmt) and s.intrin_name == "vdla.dma":
            self.dma(s.attrs["node"], env)
        elif isinstance(s, S.IntrinsicStmt) and s.intrin_name == "vdla.uops":
            self.uops(s.attrs["node"], env)
        else:
            from ...tir.printer import to_text
            text = to_text(s).strip().splitlines()
            raise VdlaLoweringError(f"kernel {self.func.name}: no VDLA instruction computes `{text[0] if text else s}`; "
                                    "accelerator kernels are DMA copies and tensorized GEMM/ALU intrinsics "
                                    "(cache the operands into vdla scopes and tensorize the stage)")

    def allocate(self, s, env):
        buf = s.buffer
        if buf.scope not in SCOPE_MEM:
            raise VdlaLoweringError(f"kernel {self.func.name}: buffer {buf.name} in scope {buf.scope}; VDLA kernels "
                                    f"allocate only {', '.join(SCOPE_MEM)}")
        elems = buffer_elems(self.config, buf)
        var, n = self.replicas.get(buf, (None, 1))
        base = self.top[buf.scope]
        if base + elems * n > sram_depth(self.config, buf.scope):
            raise VdlaLoweringError(f"kernel {self.func.name}: {buf.name} ({elems} x {n}) overflows {buf.scope}")
        self.top[buf.scope] = base + elems * n
        self.place[buf] = (base, elems, var)
        self.stmt(s.body, env)
        self.top[buf.scope] = base
        del self.place[buf]

    def addr(self, buf, env) -> int:
        try:
            base, elems, var = self.place[buf]
        except KeyError:
            raise VdlaLoweringError(f"kernel {self.func.name}: {buf.name} is used outside its allocation") from None
        return base + (env[var] * elems if var is not None else 0)

    # ---- DMA --------------------------------------------------------------------------------
    def dma(self, node, env):
        what = f"kernel {self.func.name}: {node.kind} of {node.sram.name}"
        param = self.params[id(node.dram)]
        self.param_elem.setdefault(param, dram_elem_bytes(self.config, node.mem_type))
        base = self.addr(node.sram, env)
        si, di = node.sram_index.bind(env) + base, node.dram_index.bind(env)
        atoms = [a.bind(env) for a in node.guard]
        loops = []
        for v, e in node.loops:
            if e == 1:
                si, di, atoms = si.bind({v: 0}), di.bind({v: 0}), [a.bind({v: 0}) for a in atoms]
            else:
                loops.append((v, e))
        guarded = set().union(*(a.vars() for a in atoms)) if atoms else set()
        # x: the innermost loop when it is contiguous on both sides; merge outer loops into it
        # while the rows chain (no padding between them)
        x_vars, x_ext = [], 1
        rest = list(loops)
        if rest and si.coeff(rest[-1][0]) == 1 and di.coeff(rest[-1][0]) == 1:
            v, e = rest.pop()
            x_vars, x_ext = [v], e
            while (rest and not guarded & {*x_vars, rest[-1][0]} and si.coeff(rest[-1][0]) == x_ext
                   and di.coeff(rest[-1][0]) == x_ext):
                v, e = rest.pop()
                x_vars.append(v)
                x_ext *= e
        y = None
        if rest and si.coeff(rest[-1][0]) == x_ext and di.coeff(rest[-1][0]) >= 0:
            y = rest.pop()
        for values in itertools.product(*(range(e) for _, e in rest)):
            outer = {v: i for (v, _), i in zip(rest, values)}
            a_now = [a.bind(outer) for a in atoms]
            self._dma_block(node, what, param, si.bind(outer), di.bind(outer), a_now, x_vars, x_ext, y)

    def _dma_block(self, node, what, param, si, di, atoms, x_vars, x_ext, y):
        zero = {v: 0 for v in x_vars}
        if len(x_vars) == 1:
            x_lo, x_hi = valid_range(atoms, x_vars[0], x_ext, what)
        else:
            x_lo, x_hi = 0, x_ext
        y_var, y_ext = y if y else (None, 1)
        y_lo, y_hi = valid_range(atoms, y_var, y_ext, what) if y else (0, 1)
        bound = set(x_vars) | ({y_var} if y else set())
        if any(not a.vars() and a.const < 0 for a in atoms):
            x_hi = x_lo              # the whole block is outside the guard
        if x_hi <= x_lo or y_hi <= y_lo:
            if node.kind == "store":
                return
            raise VdlaLoweringError(f"{what}: a DMA block lies entirely in padding; the DMA needs at least "
                                    "one element of data per transfer (use a tile that overlaps the tensor)")
        for a in atoms:
            if a.vars() - bound:
                raise VdlaLoweringError(f"{what}: guard {a!r} >= 0 depends on a loop the DMA enumerates")
        y_stride = di.coeff(y_var) if y else x_hi - x_lo
        at = {**zero, **({y_var: 0} if y else {})}
        if node.kind == "load":
            pads = (y_lo, y_ext - y_hi, x_lo, x_ext - x_hi)
            limit = self.config.isa.max_pad
            if max(pads) > limit:
                raise VdlaLoweringError(f"{what}: padding {pads} (rows above/below, columns left/right) exceeds "
                                        f"the DMA's {limit}-element pad fields; use smaller tiles")
            src_at = {**at, **({x_vars[0]: x_lo} if len(x_vars) == 1 else {}), **({y_var: y_lo} if y else {})}
            sram0 = si.value(at)
            rows, cols = y_ext, x_ext
            call = Load(int(node.mem_type), sram0, param, di.value(src_at), x_hi - x_lo, y_hi - y_lo,
                        max(y_stride, x_hi - x_lo), *pads, pad_min=int(bool(node.pad_min and any(pads))))
            mem = SCOPE_MEM[node.sram.scope]
            stage = Stage.LOAD if node.mem_type in (MemType.INP, MemType.WGT) else Stage.COMPUTE
            self.add(Op(stage, call, writes=[(mem, sram0, sram0 + rows * cols)]))
            return
        # store: OUT rows are read back to back, so a trimmed row is stored on its own
        rows = [(y_lo, y_hi)] if (x_lo, x_hi) == (0, x_ext) else [(r, r + 1) for r in range(y_lo, y_hi)]
        for r0, r1 in rows:
            pos = {**at, **({x_vars[0]: x_lo} if len(x_vars) == 1 else {}), **({y_var: r0} if y else {})}
            sram0 = si.value(pos)
            n = (x_hi - x_lo) * (r1 - r0)
            call = Store(sram0, param, di.value(pos), x_hi - x_lo, r1 - r0, max(y_stride, x_hi - x_lo))
            self.add(Op(Stage.STORE, call, reads=[("acc", sram0, sram0 + n)]))

    # ---- micro-op kernels -------------------------------------------------------------------
    def uops(self, nest, env):
        inst = nest.loops[:nest.n_inst]
        hw = nest.loops[nest.n_inst:nest.n_inst + nest.n_hw]
        ul = nest.loops[nest.n_inst + nest.n_hw:]
        for values in itertools.product(*(range(e) for _, e in inst)):
            env2 = {**env, **{v: i for (v, _), i in zip(inst, values)}}
            forms = {k: a.bind(env2) + self.addr(b, env2) for k, (b, a) in nest.operands()}
            self._uop_kernel(nest, forms, hw, ul)

    def _uop_kernel(self, nest, forms, hw, ul):
        grids = np.meshgrid(*(np.arange(e) for _, e in ul), indexing="ij") if ul else []
        flat = {}
        for k, a in forms.items():
            idx = np.full(grids[0].shape if grids else (), a.const, dtype=np.int64)
            for (v, _), g in zip(ul, grids):
                idx = idx + a.coeff(v) * g
            flat[k] = idx.ravel() if grids else idx.reshape(1)
        if nest.window is not None:       # one row of a sliding window (vdla.hw.depthwise)
            dst, src, wgt = _window_row(nest.window, flat)
        else:
            dst = flat["dst"]
            src = flat.get("src", dst if nest.mode == "alu" else np.zeros_like(dst))
            wgt = flat.get("wgt", np.zeros_like(dst))
        levels = [LoopLevel(e, forms["dst"].coeff(v), forms.get("src", forms["dst"] if nest.mode == "alu"
                                                               else Affine()).coeff(v),
                            forms.get("wgt", Affine()).coeff(v) if nest.mode == "gemm" else 0) for v, e in hw]
        # (a tile loop makes the same kernel many times: known ones skip building micro-ops)
        made = (nest.mode, nest.reset, nest.window is not None, nest.alu_op, nest.imm, nest.requant, tuple(levels),
                *(np.asarray(a, dtype=np.int64).tobytes() for a in (dst, src, wgt)))
        index = self._made.get(made)
        if index is None:
            index = self._made[made] = self._kernel(nest, dst, src, wgt, levels)
        kernel = self.kernels[index]
        outer, inner = kernel.padded_loops()

        def span(which, uop_vals):
            lo = int(uop_vals.min()) 
            hi = int(uop_vals.max()) + (outer.extent - 1) * getattr(outer, which) + (inner.extent - 1) * getattr(inner, which)
            return lo, hi + 1
        acc = (SCOPE_MEM[nest.dst[0].scope], *span("dst", dst))    # SETQ: the requantizer's registers
        writes, reads = [acc], []
        if nest.mode == "gemm" and not nest.reset:
            reads = [("inp", *span("src", src)), ("wgt", *span("wgt", wgt))]
        elif nest.mode == "alu":
            reads = [acc] + ([("acc", *span("src", src))] if nest.imm is None else [])
        self.add(Op(Stage.COMPUTE, (Gemm if nest.mode == "gemm" else Alu)(index), reads, writes),
                 reset=nest.reset)

    def _kernel(self, nest, dst, src, wgt, levels) -> int:
        """The index of the validated kernel of these micro-ops and loops (equal kernels share one)."""
        uops = [Uop(int(d), int(s), int(w)) for d, s, w in zip(dst, src, wgt)]
        if nest.mode == "gemm":
            kernel = UopKernel.gemm(uops, levels, reset=nest.reset, name=nest.name,
                                    depthwise=nest.window is not None)
        else:
            kernel = UopKernel.alu(nest.alu_op, uops, levels, imm=nest.imm, name=nest.name, requant=nest.requant)
        index = self._kernel_index.get(kernel)
        if index is None:
            try:
                kernel.validate(self.config)
            except KernelError as exc:
                raise VdlaLoweringError(f"kernel {self.func.name}: {exc}") from None
            index = self._kernel_index[kernel] = len(self.kernels)
            self.kernels.append(kernel)
        return index
