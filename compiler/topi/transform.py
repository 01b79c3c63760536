"""Data movement: pad, reshape, transpose, concat, split, slice, layout packing."""
from __future__ import annotations

import math

from vdla.driver.host_ops.shape import slice_bounds

from .. import te
from ..tir import expr as E
from . import tags


def pad(x, pads_before, pads_after=None, value=0.0, name="pad"):
    """Constant padding; pads_before/after list one amount per axis (ONNX Pad's two halves)."""
    pads_after = pads_before if pads_after is None else pads_after
    if len(pads_before) != x.ndim or len(pads_after) != x.ndim:
        raise ValueError(f"pad: {x.ndim}-d input needs {x.ndim} pad amounts per side, got "
                         f"{list(pads_before)} / {list(pads_after)}")
    if all(p == 0 for p in list(pads_before) + list(pads_after)):
        return x
    out_shape = [s + a + b for s, a, b in zip(x.shape, pads_before, pads_after)]

    def f(*i):
        conds, idx = [], []
        for k, (ik, b, s) in enumerate(zip(i, pads_before, x.shape)):
            if pads_before[k] or pads_after[k]:
                conds += [ik >= b, ik < b + s]
            idx.append(ik - b if b else ik)
        return te.if_then_else(E.all_of(*conds), x(*idx), E.to_expr(value, x.dtype))
    return te.compute(out_shape, f, name=name, tag=tags.INJECTIVE)


def _unravel(flat, shape):
    idx = []
    for s in reversed(shape):
        idx.append(flat % s if s != 1 else E.Const(0, "int32"))
        flat = flat // s
    return list(reversed(idx))


def reshape(x, newshape):
    """numpy-style reshape (row-major); one -1 entry is inferred."""
    newshape = list(newshape)
    total = math.prod(x.shape)
    if newshape.count(-1) > 1:
        raise ValueError(f"reshape: at most one -1 in {newshape}")
    if -1 in newshape:
        known = math.prod(d for d in newshape if d != -1)
        newshape[newshape.index(-1)] = total // known
    if math.prod(newshape) != total:
        raise ValueError(f"reshape: cannot reshape {list(x.shape)} ({total} elements) into {newshape}")

    def f(*i):
        flat = E.Const(0, "int32")
        for ik, s in zip(i, newshape):
            flat = flat * s + ik
        return x(*_unravel(flat, x.shape))
    return te.compute(newshape, f, name="reshape", tag=tags.INJECTIVE)


def broadcast_to(x, shape):
    """ONNX Expand: x broadcast with `shape` (numpy's rule, either side may be 1)."""
    from .elemwise import broadcast_shape
    out = broadcast_shape(tuple(x.shape), tuple(shape))
    off = len(out) - x.ndim
    return te.compute(out, lambda *i: x(*[0 if x.shape[k] == 1 else i[k + off] for k in range(x.ndim)]),
                      name="expand", tag=tags.BROADCAST)


def tile(x, repeats):
    """ONNX Tile: x repeated `repeats[k]` times along axis k."""
    if len(repeats) != x.ndim:
        raise ValueError(f"tile: {len(repeats)} repeats for {x.ndim} axes")
    out = [s * r for s, r in zip(x.shape, repeats)]
    return te.compute(out, lambda *i: x(*[ik % s if r != 1 else ik for ik, s, r in zip(i, x.shape, repeats)]),
                      name="tile", tag=tags.INJECTIVE)


def depth_to_space(x, block, mode="DCR"):
    """ONNX DepthToSpace of [N, C, H, W]: DCR reads channel (bh * b + bw) * C' + c, CRD
    c * b * b + bh * b + bw, for output (c, h * b + bh, w * b + bw)."""
    n, c, h, w = x.shape
    cc = c // (block * block)

    def f(i, k, y, z):
        bh, bw = y % block, z % block
        ch = (bh * block + bw) * cc + k if mode == "DCR" else k * block * block + bh * block + bw
        return x(i, ch, y // block, z // block)
    return te.compute((n, cc, h * block, w * block), f, name="depth_to_space", tag=tags.INJECTIVE)


def space_to_depth(x, block, mode="DCR"):
    """ONNX SpaceToDepth of [N, C, H, W]: output channel (bh * b + bw) * C + c (DCR; CRD:
    c * b * b + bh * b + bw) holds (h * b + bh, w * b + bw)."""
    n, c, h, w = x.shape

    def f(i, ch, y, z):
        k, phase = (ch % c, ch // c) if mode == "DCR" else (ch // (block * block), ch % (block * block))
        return x(i, k, y * block + phase // block, z * block + phase % block)
    return te.compute((n, c * block * block, h // block, w // block), f, name="space_to_depth", tag=tags.INJECTIVE)


def flatten(x, axis=1):
    """ONNX Flatten: [prod(shape[:axis]), prod(shape[axis:])]."""
    return reshape(x, [math.prod(x.shape[:axis]), math.prod(x.shape[axis:])])


def transpose(x, axes=None):
    axes = list(reversed(range(x.ndim))) if axes is None else [a % x.ndim for a in axes]
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"transpose: {axes} is not a permutation of {x.ndim} axes")
    out_shape = [x.shape[a] for a in axes]

    def f(*i):
        src = [None] * x.ndim
        for o, a in enumerate(axes):
            src[a] = i[o]
        return x(*src)
    return te.compute(out_shape, f, name="transpose", tag=tags.INJECTIVE)


def concat(tensors, axis=0):
    tensors = list(tensors)
    nd = tensors[0].ndim
    axis = axis % nd
    for t in tensors[1:]:
        if t.ndim != nd or any(t.shape[k] != tensors[0].shape[k] for k in range(nd) if k != axis):
            raise ValueError(f"concat on axis {axis}: shapes {[list(t.shape) for t in tensors]} differ off-axis")
        if t.dtype != tensors[0].dtype:
            raise TypeError(f"concat: dtypes {[t.dtype for t in tensors]} differ")
    offsets = [0]
    for t in tensors:
        offsets.append(offsets[-1] + t.shape[axis])
    out_shape = list(tensors[0].shape)
    out_shape[axis] = offsets[-1]

    def f(*i):
        # innermost select picks the last input; walk backwards building the chain
        def read(k):
            idx = list(i)
            idx[axis] = i[axis] - offsets[k] if offsets[k] else i[axis]
            return tensors[k](*idx)
        out = read(len(tensors) - 1)
        for k in range(len(tensors) - 2, -1, -1):
            out = E.Select(i[axis] < offsets[k + 1], read(k), out)
        return out
    return te.compute(out_shape, f, name="concat", tag=tags.INJECTIVE)


def strided_slice(x, starts, ends, axes=None, steps=None):
    """ONNX Slice with static starts/ends/axes/steps (negative values count from the end)."""
    axes = list(range(len(starts))) if axes is None else [a % x.ndim for a in axes]
    steps = [1] * len(starts) if steps is None else list(steps)
    begin = [0] * x.ndim
    step = [1] * x.ndim
    out_shape = list(x.shape)
    for a, s, e, st in zip(axes, starts, ends, steps):
        taken = range(x.shape[a])[slice_bounds(x.shape[a], s, e, st)]
        if not taken:
            raise ValueError(f"slice: axis {a} becomes empty")
        begin[a], step[a], out_shape[a] = taken.start, st, len(taken)
    return te.compute(out_shape, lambda *i: x(*[b + ik * st if st != 1 else (ik + b if b else ik)
                                                  for ik, b, st in zip(i, begin, step)]),
                      name="slice", tag=tags.INJECTIVE)


def split(x, sizes, axis=0):
    """Split along axis into pieces of the given sizes -> list of tensors."""
    axis = axis % x.ndim
    if sum(sizes) != x.shape[axis]:
        raise ValueError(f"split: sizes {list(sizes)} do not add up to {x.shape[axis]}")
    out, start = [], 0
    for s in sizes:
        out.append(strided_slice(x, [start], [start + s], [axis]))
        start += s
    return out


def take(x, index: int, axis: int = 0):
    """ONNX Gather of one constant scalar index: x at `index` along `axis`, that axis dropped
    (a negative index counts from the end)."""
    axis = axis % x.ndim
    dim = x.shape[axis]
    if not -dim <= index < dim:
        raise ValueError(f"take: index {index} is outside the {dim} entries of axis {axis}")
    if x.ndim < 2:
        raise ValueError("take: a scalar result has no kernel")
    index %= dim
    return te.compute(x.shape[:axis] + x.shape[axis + 1:], lambda *i: x(*i[:axis], index, *i[axis:]),
                      name="take", tag=tags.INJECTIVE)


def nchw_to_nchwc(x, block):
    """[N, C, H, W] -> [N, C/block, H, W, block] (C must divide; pad channels first if not)."""
    n, c, h, w = x.shape
    if c % block:
        raise ValueError(f"nchw_to_nchwc: {c} channels are not a multiple of block {block}")
    return te.compute((n, c // block, h, w, block), lambda a, b, y, z, k: x(a, b * block + k, y, z),
                      name="nchw_to_nchwc", tag=tags.INJECTIVE)


def nchwc_to_nchw(x):
    n, cb, h, w, blk = x.shape
    return te.compute((n, cb * blk, h, w), lambda a, c, y, z: x(a, c // blk, y, z, c % blk),
                      name="nchwc_to_nchw", tag=tags.INJECTIVE)


def squeeze(x, axes=None):
    axes = [a for a in range(x.ndim) if x.shape[a] == 1] if axes is None else [a % x.ndim for a in axes]
    return reshape(x, [d for k, d in enumerate(x.shape) if k not in axes])


def expand_dims(x, axis, num=1):
    shape = list(x.shape)
    axis = axis % (x.ndim + 1)
    return reshape(x, shape[:axis] + [1] * num + shape[axis:])
