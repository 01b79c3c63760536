"""Micro-op kernels: accumulator resets, tensorized GEMM/ALU intrinsics and the loops
around them become UopNest nodes (IntrinsicStmt "vdla.uops").

- alias_alu_results: the ALU updates an accumulator in place (ACC[d] = op(ACC[d], x)), so
  a stage computed by an ALU intrinsic shares its source's buffer;
- inject_acc_reset: `acc[...] = 0` nests (a reduction's init) become GEMM resets;
- fold_uop_kernels: the perfect loop nest around a tensorized intrinsic is folded into one
  instruction: loops merge where their strides chain, the innermost ones are enumerated as
  micro-ops (up to a quarter of the micro-op SRAM, so kernels of two virtual threads stay
  resident), the next two become the instruction's iter_out/iter_in levels, and any outer
  rest repeats the instruction. A DEPTHWISE row (vdla.depthwise) is its instruction's
  micro-ops by itself: the window restarts with each of the instruction's loop iterations, so
  no loop around it is enumerated."""
from __future__ import annotations

from vdla.hw import AluOp

from ...tir import expr as E
from ...tir.arith import structural_equal
from ...tir import stmt as S
from ...tir.functor import visit
from .affine import Affine
from .errors import VdlaLoweringError
from .nodes import UopNest, scope_lanes
from .walk import perfect_nest, rewrite

# ---- in-place ALU results ---------------------------------------------------------------------
def alias_alu_results(func):
    alias = {}

    def find(s):
        if isinstance(s, S.IntrinsicStmt) and s.intrin_name == "vdla.alu":
            src, dst = s.regions[0], s.regions[-1]
            if dst.data is src.data:
                return
            if list(dst.data.shape) != list(src.data.shape) or not structural_equal(
                    E.to_expr(dst.elem_offset, "int32"), E.to_expr(src.elem_offset, "int32")):
                raise VdlaLoweringError(
                    f"ALU stage {dst.data.name}: the ALU updates accumulators in place, so {dst.data.name} must "
                    f"cover the same tile as its source {src.data.name} (same shape and compute_at)")
            alias[dst.data] = src.data
    visit(func.body, find)
    if not alias:
        return func

    def root(b):
        while b in alias:
            b = alias[b]
        return b

    def view(b):
        if b.data is None:
            return root(b)
        new = root(b.data)
        if new is b.data:
            return b
        return S.Buffer(b.name, b.shape, b.dtype, scope=b.scope, strides=b.strides, elem_offset=b.elem_offset,
                        data=new)

    def fix(s):
        if isinstance(s, S.Allocate) and s.buffer in alias:
            return rewrite(s.body, fix)
        if isinstance(s, S.IntrinsicStmt):
            return S.IntrinsicStmt(s.intrin_name, [view(r) for r in s.regions], s.attrs)
        if isinstance(s, S.BufferStore) and s.buffer in alias:
            return S.BufferStore(root(s.buffer), _fix_loads(s.value, root), s.indices)
        if isinstance(s, S.BufferStore):
            return S.BufferStore(s.buffer, _fix_loads(s.value, root), s.indices)
        return None
    return func.with_body(rewrite(func.body, fix))


def _fix_loads(expr, root):
    from ...tir.functor import transform

    def post(n):
        if isinstance(n, E.BufferLoad) and root(n.buffer) is not n.buffer:
            return E.BufferLoad(root(n.buffer), n.indices, n.dtype)
        return None
    return transform(expr, post)


# ---- resets -----------------------------------------------------------------------------------
def inject_acc_reset(config):
    def run(func):
        def visit_stmt(stmt):
            if not isinstance(stmt, S.For):
                return None
            loops, inner = perfect_nest(stmt)
            if not (isinstance(inner, S.BufferStore) and inner.buffer.scope == "vdla.acc"
                    and E.is_const(inner.value, 0)):
                return None
            buf = inner.buffer
            what = f"reset of {buf.name}"
            if len(loops) < 2 or [v for v, _ in loops[-2:]] != [i for i in inner.indices[-2:]]:
                raise VdlaLoweringError(f"{what}: the innermost loops must walk the accumulator element")
            nest = UopNest("gemm", loops[:-2], (buf, _elem_index(buf, inner.indices, what)), reset=True,
                           name=f"reset {buf.name}")
            return _intrinsic(plan_loops(nest, config))
        return func.with_body(rewrite(func.body, visit_stmt))
    run.__name__ = "inject_acc_reset"
    return run


def _elem_index(buf, indices, what) -> Affine:
    lead = [int(d) for d in buf.shape[:-2]]
    out, stride = Affine(), 1
    for idx, d in zip(reversed(indices[:-2]), reversed(lead)):
        out = out + Affine.of(idx, what).scale(stride)
        stride *= d
    return out


# ---- tensorized intrinsics --------------------------------------------------------------------
def fold_uop_kernels(config):
    def run(func):
        def visit_stmt(stmt):
            loops, inner = perfect_nest(stmt)
            if not (isinstance(inner, S.IntrinsicStmt)
                    and inner.intrin_name in ("vdla.gemm", "vdla.depthwise", "vdla.alu")):
                return None
            nest = _nest_of(config, loops, inner)
            if nest.window is not None and inner.attrs.get("reset"):
                raise VdlaLoweringError(f"{nest.name}: a DEPTHWISE row accumulates; keep a reduction loop (the "
                                        "kernel rows) outside it, whose first pass the accumulator reset precedes")
            if inner.intrin_name != "vdla.alu" and inner.attrs.get("reset"):
                # the whole reduction lies inside the intrinsic (no init nest): the GEMM core
                # only accumulates, so the accumulators are reset first
                zero = UopNest("gemm", loops, nest.dst, reset=True, name=f"reset {nest.dst[0].name}")
                return S.seq(_intrinsic(plan_loops(zero, config)), _intrinsic(plan_loops(nest, config)))
            return _intrinsic(plan_loops(nest, config))
        return func.with_body(rewrite(func.body, visit_stmt))
    run.__name__ = "fold_uop_kernels"
    return run


def _operand(config, view, what, loops=()):
    lanes = scope_lanes(config, view.scope)
    off = Affine.of(view.elem_offset, what, {v: (0, e - 1) for v, e in loops})
    return view.data, off.exact_div(lanes, f"{what} ({view.data.name})")


def _nest_of(config, loops, intr) -> UopNest:
    regions = intr.regions
    if intr.intrin_name == "vdla.depthwise":
        inp, wgt, acc = regions
        name = f"depthwise {acc.data.name}"
        steps = [_pixel_step(config, view, name) for view in (inp, acc)]
        stride, zero_tiles = intr.attrs.get("stride", 1), intr.attrs.get("zero_tiles", 0)
        window = (intr.attrs["width"], *steps, stride, _zero_step(config, wgt, zero_tiles, name))
        return UopNest("gemm", loops, _operand(config, acc, name), _operand(config, inp, name),
                       _operand(config, wgt, name), name=name, window=window)
    if intr.intrin_name == "vdla.gemm":
        inp, wgt, acc = regions
        name = f"gemm {acc.data.name}"
        return UopNest("gemm", loops, _operand(config, acc, name), _operand(config, inp, name),
                       _operand(config, wgt, name), name=name)
    op, imm = intr.attrs["op"], intr.attrs.get("imm")
    dst = regions[-1]
    name = f"alu.{op} {dst.data.name}"
    src = _operand(config, regions[1], name, loops) if len(regions) == 3 else None
    if op == "shr" and imm is None:
        raise VdlaLoweringError(f"{name}: a shift by a tensor operand is not offered; shift by an immediate")
    return UopNest("alu", loops, _operand(config, dst, name, loops), src, alu_op=AluOp[op.upper()], imm=imm,
                   name=name, requant=bool(intr.attrs.get("requant")))


def _pixel_step(config, view, what) -> int:
    """The element step from one pixel of a DEPTHWISE row to the next."""
    lanes = scope_lanes(config, view.scope)
    step = int(view.strides[0])
    if step % lanes:
        raise VdlaLoweringError(f"{what}: {view.data.name}'s pixels are {step} scalars apart, not whole "
                                f"elements of {lanes}")
    return step // lanes


def _zero_step(config, view, tiles: int, what) -> int:
    """The element step from a DEPTHWISE row's weight tile to its zero tile, `tiles` tiles on
    along the buffer's tile axis (the one before a tile's rows and lanes)."""
    if not tiles:
        return 0
    shape = [int(d) for d in view.data.shape]
    if len(shape) < 3 or shape[-3] < 2 * tiles:
        raise VdlaLoweringError(f"{what}: {view.data.name} {shape} has no zero tiles {tiles} tiles after its "
                                "kernel rows")
    lanes = scope_lanes(config, view.scope)
    return tiles * shape[-2] * shape[-1] // lanes


def _intrinsic(nest: UopNest):
    bufs = [b for _, (b, _) in nest.operands()]
    return S.IntrinsicStmt("vdla.uops", bufs, {"node": nest})


# ---- loop planning ----------------------------------------------------------------------------
def plan_loops(nest: UopNest, config) -> UopNest:
    """Drop unit loops, merge chained loops, and split the rest into instruction repeats,
    hardware loop levels and enumerated micro-ops (see the module docstring)."""
    ops = {k: a for k, (_, a) in nest.operands()}
    loops = []
    for v, e in nest.loops:
        if e == 1:
            ops = {k: a.bind({v: 0}) for k, a in ops.items()}
        else:
            loops.append((v, e))
    merged = []
    for v, e in loops:
        if merged:
            pv, pe = merged[-1]
            if all(a.coeff(pv) == e * a.coeff(v) for a in ops.values()):
                # one loop of pe*e iterations with the inner loop's strides
                ops = {k: Affine(a.const, {x: c for x, c in a.coeffs.items() if x is not pv}) for k, a in ops.items()}
                merged[-1] = (v, pe * e)
                continue
        merged.append((v, e))
    budget = max(1, config.uop_depth // 4)
    elementwise = nest.reset or nest.mode == "alu"

    def hw_ok(v):
        return all(a.coeff(v) >= 0 for a in ops.values())

    if elementwise:
        # order does not matter: the innermost loops become hardware levels, outer ones micro-ops
        hw = [lv for lv in merged[-2:] if hw_ok(lv[0])]
        rest = [lv for lv in merged if lv not in hw]
        uop_loops = _innermost_within(rest, budget)
        inst = rest[:len(rest) - len(uop_loops)]
    else:
        # a DEPTHWISE row is the micro-ops by itself; GEMM enumerates its innermost loops
        uop_loops = [] if nest.window is not None else _innermost_within(merged, budget)
        outer = merged[:len(merged) - len(uop_loops)]
        hw = []
        for v, e in reversed(outer):
            if len(hw) == 2 or not hw_ok(v):
                break
            hw.insert(0, (v, e))
        inst = outer[:len(outer) - len(hw)]
    out = UopNest(nest.mode, inst + hw + uop_loops, **{k: (b, ops[k]) for k, (b, _) in nest.operands()},
                  reset=nest.reset, alu_op=nest.alu_op, imm=nest.imm, n_hw=len(hw), n_inst=len(inst),
                  name=nest.name, requant=nest.requant, window=nest.window)
    return out


def _innermost_within(loops, budget):
    """The longest run of innermost loops whose iteration count stays within budget."""
    out, count = [], 1
    for v, e in reversed(loops):
        if count * e > budget:
            break
        out.insert(0, (v, e))
        count *= e
    return out
