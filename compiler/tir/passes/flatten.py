"""flatten_buffers: multi-dimensional buffer accesses -> one flat element index.

After this pass every BufferLoad/BufferStore has exactly one index, the element offset
(elem_offset + sum(index_k * stride_k)); Allocate keeps the buffer (its size is the product
of its shape)."""
from .. import expr as E
from ..arith import simplify
from ..functor import transform
from ..stmt import BufferStore


def flat_index(buf, indices):
    if len(indices) == 1 and len(buf.shape) != 1:
        return indices[0]  # already flat
    strides = buf.get_strides()
    out = E.to_expr(buf.elem_offset, "int32")
    for i, s in zip(indices, strides):
        out = out + i * s if not E.is_const(i, 0) else out
    return simplify(out)


def flatten_buffers(func):
    def post(n):
        if isinstance(n, E.BufferLoad) and n.buffer.shape and len(n.indices) != 1:
            return E.BufferLoad(n.buffer, [flat_index(n.buffer, n.indices)], n.dtype)
        if isinstance(n, E.BufferLoad) and len(n.buffer.shape) == 0:
            return E.BufferLoad(n.buffer, [E.Const(0, "int32")], n.dtype)
        if isinstance(n, BufferStore) and len(n.indices) != 1:
            return BufferStore(n.buffer, n.value, [flat_index(n.buffer, n.indices)])
        return None
    out = func.with_body(transform(func.body, post))
    out.attrs["flattened"] = True
    return out
