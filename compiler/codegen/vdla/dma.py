"""inject_dma: copy loop nests between DRAM tensors and the accelerator's scopes become DMA
nodes (IntrinsicStmt "vdla.dma").

A load nest is `scoped[i...] = src[j...]`, optionally `select(cond, src[j...], 0)` (the
padding of a conv input: the DMA's pad fields write those zeros; `select(cond, x, -128)`
pads with the minimum instead: LOAD pad_min) and optionally cast
int8 -> int32 into the accumulator (LOAD ACC_8BIT). A store nest is
`dst[j...] = int8(acc[i...])` (STORE OUT: the low 8 bits of the accumulator), possibly under
an if (a tile that overhangs the tensor stores only its inside). The innermost two loops
must walk the element (the two innermost dimensions on both sides, SPEC §7 layouts)."""
from __future__ import annotations

from vdla.hw import MemType

from ...tir import expr as E
from ...tir import stmt as S
from .affine import Affine, guard_atoms
from .errors import VdlaLoweringError
from .nodes import SCOPE_MEM, DmaCopy, scope_lanes
from .walk import perfect_nest, rewrite


def inject_dma(config):
    def run(func):
        params = {id(b) for b in func.params}

        def visit(stmt):
            if not isinstance(stmt, S.For):
                return None
            loops, inner = perfect_nest(stmt)
            guard = None
            if isinstance(inner, S.IfThenElse) and inner.else_case is None:
                guard, inner = inner.cond, inner.then_case
            if not isinstance(inner, S.BufferStore):
                return None
            node = _match_copy(config, loops, inner, guard, params)
            if node is None:
                return None
            return S.IntrinsicStmt("vdla.dma", [node.sram, node.dram], {"node": node})
        return func.with_body(rewrite(func.body, visit))
    run.__name__ = "inject_dma"
    return run


_PAD_MIN = {"int8": -128, "int32": -(1 << 31)}


def _strip_load(value):
    """(BufferLoad, cast-from dtype or None, select condition or None, pad with the minimum?)
    or None; the cast may sit inside or outside the select, whose other value must be 0 or
    the most negative value of its type (the DMA's two padding values)."""
    cond = cast_from = None
    pad_min = False
    if isinstance(value, E.Cast):
        cast_from, value = value.value.dtype, value.value
    if isinstance(value, E.Select) and isinstance(value.f, E.Const) and (
            value.f.value == 0 or value.f.value == _PAD_MIN.get(value.f.dtype)):
        cond, pad_min, value = value.cond, value.f.value != 0, value.t
    if cast_from is None and isinstance(value, E.Cast):
        cast_from, value = value.value.dtype, value.value
    if isinstance(value, E.BufferLoad):
        return value, cast_from, cond, pad_min
    return None


def _match_copy(config, loops, store, guard, params):
    stripped = _strip_load(store.value)
    if stripped is None:
        return None
    load, cast_from, select_cond, pad_min = stripped
    dst, src = store.buffer, load.buffer
    if dst.scope in SCOPE_MEM and id(src) in params:
        kind, sram, dram, sram_idx, dram_idx = "load", dst, src, store.indices, load.indices
    elif src.scope == "vdla.acc" and id(dst) in params:
        kind, sram, dram, sram_idx, dram_idx = "store", src, dst, load.indices, store.indices
    else:
        return None
    what = f"copy {src.name} -> {dst.name}"
    if kind == "load":
        if guard is not None:
            raise VdlaLoweringError(f"{what}: a load under an if; express padding as select(cond, x, 0)")
        guard = select_cond
        mem_type = {"vdla.inp": MemType.INP, "vdla.wgt": MemType.WGT, "vdla.acc": MemType.ACC,
                    "vdla.lut": MemType.LUT}[sram.scope]
        if mem_type is MemType.ACC and dram.dtype == "int8" and cast_from == "int8":
            mem_type = MemType.ACC_8BIT
        elif dram.dtype != sram.dtype:
            raise VdlaLoweringError(f"{what}: {dram.dtype} into {sram.scope} holding {sram.dtype}; the DMA "
                                    "copies int8 into vdla.inp/vdla.wgt and int32 or int8 (sign-extended) "
                                    "into vdla.acc")
    else:
        if select_cond is not None or pad_min:
            raise VdlaLoweringError(f"{what}: a store cannot pad")
        if dram.dtype != "int8" or cast_from not in (None, "int32"):
            raise VdlaLoweringError(f"{what}: STORE writes the int8 truncation of the accumulator, "
                                    f"but the output {dram.name} is {dram.dtype}")
        mem_type = MemType.OUT
    lanes = scope_lanes(config, sram.scope)
    for buf in (sram, dram):
        if len(buf.shape) < 2 or int(buf.shape[-1]) * int(buf.shape[-2]) != lanes:
            raise VdlaLoweringError(f"{what}: the two innermost dimensions of {buf.name} {list(buf.shape)} "
                                    f"must be one {sram.scope} element ({lanes} lanes, SPEC §7 layouts)")
    if len(loops) < 2:
        raise VdlaLoweringError(f"{what}: the copy must loop over the element's two dimensions")
    elem_vars = [v for v, _ in loops[-2:]]
    for buf, idx in ((sram, sram_idx), (dram, dram_idx)):
        if [i for i in idx[-2:]] != elem_vars and not all(
                (i is v) or (E.is_const(i, 0) and int(d) == 1)
                for i, v, d in zip(idx[-2:], elem_vars, buf.shape[-2:])):
            raise VdlaLoweringError(f"{what}: the innermost loops must walk whole elements of {buf.name} "
                                    f"in order (indices {list(idx[-2:])!r})")
    if [e for _, e in loops[-2:]] != [int(d) for d in sram.shape[-2:]]:
        raise VdlaLoweringError(f"{what}: the element loops have extents {[e for _, e in loops[-2:]]}, "
                                f"the element is {list(sram.shape[-2:])}")
    atoms = guard_atoms(guard, what)
    for a in atoms:
        if a.vars() & set(elem_vars):
            raise VdlaLoweringError(f"{what}: the guard depends on lanes of an element; the DMA pads whole "
                                    "elements")
    return DmaCopy(kind, mem_type, sram, dram, loops[:-2], _elem_index(sram, sram_idx, what),
                   _elem_index(dram, dram_idx, what), atoms, pad_min)


def _elem_index(buf, indices, what) -> Affine:
    """Row-major element index over the leading dimensions (the last two are the element)."""
    lead = [int(d) for d in buf.shape[:-2]]
    out, stride = Affine(), 1
    for idx, d in zip(reversed(indices[:-2]), reversed(lead)):
        out = out + Affine.of(idx, f"{what} ({buf.name})").scale(stride)
        stride *= d
    return out
