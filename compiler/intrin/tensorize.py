"""tensorize: match a scheduled loop region against an intrinsic's declaration and emit it.

The region is the stage's loops from the tensorized axis inwards. Matching, in order (the
first failed constraint is reported, naming the loop, operand, buffer and values):
1. axes: region data loops <-> declaration data axes and region reduction loops <->
   declaration reduction axes, in order, with equal extents (shape constraint);
2. computation: the stage's expression and the declaration's have the same structure
   (operators, constants, casts, reduction combiner); tensors pair up with operands;
3. dtypes of paired tensors/operands agree;
4. accesses: each access is affine in the region loops and uses exactly the loops the
   declaration's operand uses (an index that adds axes, a window j + t, steps the same
   stride for each); the element strides it implies must satisfy the declared
   stride constraints;
5. memory scopes of the matched buffers are among the operand's allowed scopes.
Then the intrinsic's emit rule gets BufferRegion views and returns the loop-IR statement.
"""
from __future__ import annotations

from vdla.hw.errors import CompileError

from ..tir import arith
from ..tir import expr as E
from ..tir.functor import free_vars, substitute
from .declaration import BufferRegion


class TensorizeError(CompileError, ValueError):
    pass


def _fail(st, intrin, msg):
    raise TensorizeError(f"tensorize {st.name} with {intrin.name}: {msg}")


def _structure_match(a, b, pairs, st, intrin, path="body"):
    """a: stage expression, b: declaration expression. Records TensorRead pairs."""
    if type(a) is not type(b):
        _fail(st, intrin, f"computation differs at {path}: the stage has {a!r} where the "
                          f"intrinsic computes {b!r}")
    if isinstance(a, E.TensorRead):
        pairs.append((a, b))
        if b.tensor.name in intrin.gathers:     # the place read is computed from other operands
            for k, (x, y) in enumerate(zip(a.indices, b.indices)):
                _structure_match(x, y, pairs, st, intrin, f"{path}.index[{k}]")
        return
    if isinstance(a, E.Const):
        if a.value != b.value or a.dtype != b.dtype:
            _fail(st, intrin, f"constant {a!r} in the stage differs from {b!r} in the intrinsic")
        return
    if isinstance(a, E.Var):
        _fail(st, intrin, f"the stage uses loop variable {a.name} as a value ({path}); only "
                          "tensor elements can be matched")
    if isinstance(a, E.Reduce):
        if a.combiner != b.combiner:
            _fail(st, intrin, f"reduction is {a.combiner} in the stage but {b.combiner} in the intrinsic")
        if (a.condition is None) != (b.condition is None):
            _fail(st, intrin, "one side has a reduction condition and the other does not")
        _structure_match(a.source, b.source, pairs, st, intrin, path + ".source")
        return
    if isinstance(a, (E.Cast, E.Call)) and a.dtype != b.dtype:
        _fail(st, intrin, f"dtype constraint: {a!r} is {a.dtype} but the intrinsic has {b.dtype}")
    if isinstance(a, E.Call) and a.name != b.name:
        _fail(st, intrin, f"the stage calls {a.name} where the intrinsic calls {b.name}")
    for (name, ca), (_, cb) in zip(a.children(), b.children()):
        if isinstance(ca, tuple):
            for k, (x, y) in enumerate(zip(ca, cb)):
                _structure_match(x, y, pairs, st, intrin, f"{path}.{name}[{k}]")
        elif isinstance(ca, E.Expr):
            _structure_match(ca, cb, pairs, st, intrin, f"{path}.{name}")


def _affine(e, region_vars, st, intrin, what):
    """e == base + sum(coeff[v] * v) over region vars, coefficients constant."""
    terms, const = arith.linear(arith.simplify(e))
    coeffs = {v: 0 for v in region_vars}
    base = {}
    for key, (atom, c) in terms.items():
        if atom in coeffs:
            coeffs[atom] += c
        else:
            if free_vars(atom) & set(region_vars):
                _fail(st, intrin, f"access {what} is not affine in the tensorized loops ({atom!r})")
            base[key] = [atom, c]
    return arith.from_linear(base, const), coeffs


def _flat_access(buf, indices, region_vars, st, intrin, what):
    """Flat element offset of buffer access -> (base expr, {region var: element stride})."""
    strides = buf.get_strides()
    base_total, coeff_total = E.Const(0, "int32"), {v: 0 for v in region_vars}
    for idx, s in zip(indices, strides):
        base, coeffs = _affine(idx, region_vars, st, intrin, what)
        base_total = base_total + base * s
        for v, c in coeffs.items():
            coeff_total[v] += c * s
    return arith.simplify(base_total), coeff_total


def _summed_axes(di, axis_for_var):
    """The declaration axes an operand index adds up, each with its constant factor: [(j, 1)]
    for a plain axis, [(j, 1), (t, 1)] for a window j + t (a sliding window's pixel and tap),
    [(j, 2), (t, 1)] for a window 2j + t that strides; None for anything else."""
    if isinstance(di, E.Var):
        return [(di, 1)] if di in axis_for_var else None
    if isinstance(di, E.Mul):
        for factor, var in ((di.a, di.b), (di.b, di.a)):
            if isinstance(factor, E.Const) and int(factor.value) > 0:
                inner = _summed_axes(var, axis_for_var)
                return [(a, f * int(factor.value)) for a, f in inner] if inner is not None else None
        return None
    if isinstance(di, E.Add):
        a, b = _summed_axes(di.a, axis_for_var), _summed_axes(di.b, axis_for_var)
        return a + b if a is not None and b is not None else None
    return None


def _operand_view(intrin, st, operand, decl_indices, axis_for_var, buf, base, coeffs, what):
    """Check one operand pairing and build its BufferRegion."""
    used_decl = set()
    strides = []
    for d, di in enumerate(decl_indices):
        if isinstance(di, E.Const):
            strides.append(0)
            continue
        axes = _summed_axes(di, axis_for_var)
        if axes is None:
            raise TensorizeError(f"intrinsic {intrin.name}: operand {operand.name} must be indexed by "
                                 f"plain axes (or a sum of them, each times a constant) in its declaration, "
                                 f"got {di!r}")
        vs = [(axis_for_var[a], f) for a, f in axes]
        # the element stride of one step of the index: each axis's step over its factor
        if any(coeffs[v] % f for v, f in vs) or len({coeffs[v] // f for v, f in vs}) > 1:
            _fail(st, intrin, f"{what} steps {', '.join(f'{v.name} by {coeffs[v]}' for v, _ in vs)}, but the "
                              f"intrinsic's operand {operand.name} reads them as one window index {di!r}: "
                              "they must step the same element stride per unit of that index")
        used_decl.update(v for v, _ in vs)
        strides.append(coeffs[vs[0][0]] // vs[0][1])
    for v, c in coeffs.items():
        if c != 0 and v not in used_decl:
            _fail(st, intrin, f"{what} depends on loop {v.name}, but the intrinsic's operand "
                              f"{operand.name} does not")
    want = intrin.strides.get(operand.name)
    if want is not None:
        for d, (w, got) in enumerate(zip(want, strides)):
            if w is not None and got != w and operand.shape[d] != 1:
                _fail(st, intrin, f"stride constraint: operand {operand.name} dimension {d} needs "
                                  f"element stride {w}, but {what} has stride {got} there "
                                  f"(buffer {buf.name} {list(buf.shape)})")
    allowed = intrin.scopes.get(operand.name)
    if allowed is not None and buf.scope not in allowed:
        _fail(st, intrin, f"scope constraint: operand {operand.name} must be in memory scope "
                          f"{' or '.join(repr(s) for s in allowed)}, but buffer {buf.name} is in "
                          f"{buf.scope!r}; use cache_read/cache_write into that scope")
    return BufferRegion(operand.name, buf, base, tuple(strides), tuple(operand.shape))


def emit_tensorized(ctx, st, tens_pos, roots, rel, accumulate, lower_reads, guards):
    """The intrinsic statement for stage `st` tensorized at leaf position tens_pos.
    The lowering passes what only it knows: `lower_reads(ctx, expr)` turns tensor reads into
    buffer loads with region-relative indices, `guards` are the bounds checks the region
    would need (data, reduction); tensorize imports nothing from the lowering."""
    iv_t, intrin = st.tensorize_at
    leaves = st.leaf_iter_vars[tens_pos:]
    ext = ctx.leaf_ext[st]
    decl = intrin.op
    d_data = [lv for lv in leaves if lv.kind != "reduce"]
    d_red = [lv for lv in leaves if lv.kind == "reduce"]
    # 1. axes and extents
    if len(d_data) != len(decl.axis) or len(d_red) != len(decl.reduce_axis):
        _fail(st, intrin, f"the region has {len(d_data)} data and {len(d_red)} reduction loops "
                          f"({[v.name for v in leaves]}) but the intrinsic has {len(decl.axis)} data "
                          f"and {len(decl.reduce_axis)} reduction axes")
    axis_for_var = {}
    for lv, dv in list(zip(d_data, decl.axis)) + list(zip(d_red, decl.reduce_axis)):
        if ext[lv] != dv.extent:
            _fail(st, intrin, f"shape constraint: loop {lv.name} has extent {ext[lv]} but intrinsic "
                              f"axis {dv.name} has extent {dv.extent}")
        axis_for_var[dv.var] = lv.var
    region_vars = [lv.var for lv in leaves]
    data_g, red_g = guards
    if data_g or red_g:
        _fail(st, intrin, f"shape constraint: the tensorized tile does not divide the tensor "
                          f"(a bounds check {E.all_of(*(data_g + red_g))!r} would be needed); choose "
                          "split factors that divide the axis extents")
    # 2. structure (on the stage's expression with root vars -> leaf expressions)
    rootmap = {iv.var: v for iv, v in roots.items()}
    body = substitute(ctx.expanded[st], rootmap)
    pairs = []
    _structure_match(body, decl.body, pairs, st, intrin)
    # 3. dtypes
    if st.op.dtype != intrin.output.dtype:
        _fail(st, intrin, f"dtype constraint: the stage produces {st.op.dtype} but the intrinsic "
                          f"produces {intrin.output.dtype}")
    inputs = {}
    for sread, dread in pairs:
        if sread.tensor.dtype != dread.tensor.dtype:
            _fail(st, intrin, f"dtype constraint: operand {dread.tensor.name} is {dread.tensor.dtype} "
                              f"but the stage reads {sread.tensor.name} of {sread.tensor.dtype}")
        prev = inputs.get(dread.tensor.name)
        if prev is not None and prev[0].tensor is not sread.tensor:
            _fail(st, intrin, f"operand {dread.tensor.name} is matched to two tensors")
        inputs[dread.tensor.name] = (sread, dread)
    # 4./5. accesses, strides, scopes
    views = {}
    for name, (sread, dread) in inputs.items():
        load = lower_reads(ctx, sread)     # BufferLoad with region-relative indices
        if name in intrin.gathers:
            allowed = intrin.scopes.get(name)
            if allowed is not None and load.buffer.scope not in allowed:
                _fail(st, intrin, f"scope constraint: operand {name} must be in memory scope "
                                  f"{' or '.join(repr(s) for s in allowed)}, but buffer {load.buffer.name} is in "
                                  f"{load.buffer.scope!r}; use cache_read into that scope")
            views[name] = BufferRegion(name, load.buffer, E.Const(0, "int32"), (), tuple(dread.tensor.shape))
            continue
        base, coeffs = _flat_access(load.buffer, load.indices, region_vars, st, intrin,
                                    f"the read of {sread.tensor.name}")
        views[name] = _operand_view(intrin, st, dread.tensor, dread.indices, axis_for_var,
                                    load.buffer, base, coeffs, f"the read of {sread.tensor.name}")
    out_buf = ctx.buffers[st.op]
    out_idx = [rel[iv] for iv in st.axis]
    base, coeffs = _flat_access(out_buf, out_idx, region_vars, st, intrin, f"the write of {st.name}")
    out_view = _operand_view(intrin, st, intrin.output, [iv.var for iv in decl.axis], axis_for_var,
                             out_buf, base, coeffs, f"the write of {st.name}")
    # only the region's outer part remains symbolic: fix region vars to 0 in the offsets
    zero = {v: E.Const(0, "int32") for v in region_vars}
    for v in list(views.values()) + [out_view]:
        v.offset = arith.simplify(substitute(v.offset, zero))
    ins = [views[t.name] for t in intrin.inputs if t.name in views]
    return intrin.emit(ins, out_view, accumulate)
