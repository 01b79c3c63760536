"""CPU tensor intrinsics, emitted as loop IR (vector FMAs) that the LLVM backend lowers.

vec_fma(k, lanes): c[j] (+)= sum_k a[k] * b[k, j] for j < lanes: `k` broadcast-multiply-add
steps into one vector of `lanes` floats (the body of a register-tiled GEMM/conv micro-kernel;
one fused multiply-add instruction per step on AVX-512 (16 lanes), AVX2 (8) or NEON (4)).
"""
from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import stmt as S
from .declaration import declare_intrin


def vec_fma(k=1, lanes=16, dtype="float32", out_scopes=("local", "global")):
    a = te.placeholder((k,), dtype, "a")
    b = te.placeholder((k, lanes), dtype, "b")
    r = te.reduce_axis((0, k), "k")
    c = te.compute((lanes,), lambda j: te.sum(a[r.var] * b[r.var, j], axis=r), name="c")

    def emit(ins, out, accumulate):
        va, vb = ins
        vec = lambda region, *idx: E.Ramp(region.flat(*idx), E.Const(1, "int32"), lanes)  # noqa: E731
        acc = E.BufferLoad(out.buffer, [vec(out, 0)]) if accumulate else \
            E.Broadcast(E.Const(0.0, dtype), lanes)
        stmts = []
        for step in range(k):
            bcast = E.Broadcast(E.BufferLoad(va.buffer, [va.flat(step)]), lanes)
            vb_load = E.BufferLoad(vb.buffer, [vec(vb, step, 0)])
            acc = E.Call("fma", [bcast, vb_load, acc], f"{dtype}x{lanes}")
            if step % 4 == 3 or step == k - 1:   # keep expressions small: store every 4 steps
                stmts.append(S.BufferStore(out.buffer, acc, [vec(out, 0)]))
                acc = E.BufferLoad(out.buffer, [vec(out, 0)])
        return S.AttrStmt("tensorized", None, f"vec_fma_{k}x{lanes}", S.seq(*stmts))

    return declare_intrin(
        f"vec_fma_{k}x{lanes}_{dtype}", c, emit,
        scopes={"c": tuple(out_scopes)},
        strides={"b": (None, 1), "c": (1,)},
        doc="c[0:lanes] += a[k] * b[k, 0:lanes] for each k (broadcast FMA)")
