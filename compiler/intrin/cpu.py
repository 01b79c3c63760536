"""CPU tensor intrinsics, emitted as loop IR (vector FMAs) that the LLVM backend lowers.

vec_fma(k, lanes): c[j] (+)= sum_k a[k] * b[k, j] for j < lanes: `k` broadcast-multiply-add
steps into one vector of `lanes` floats (the body of a register-tiled GEMM/conv micro-kernel;
one fused multiply-add instruction per step on AVX-512 (16 lanes), AVX2 (8) or NEON (4)).

int8_dot_16x4 / int8_dot_16x4_avx2: c[o] (+)= sum_{k<4} a[k] b[o, k], uint8 by int8 into 16
int32 lanes (the int8 conv and matmul kernels' step), by AVX-512 VNNI's vpdpbusd or exactly by
AVX2's vpmaddubsw and vpmaddwd; int8_dot_16x4_signed_avx2: the same of (a[k] - 128) with
vpsignb, exact for weights above -128 and faster on AVX2 (signed_products: the targets that
use it); int8_dot_16x4_for(target, offset) picks the one a target has.
"""
from __future__ import annotations

from .. import te
from ..tir import expr as E
from ..tir import stmt as S
from .declaration import declare_intrin

# uint8 x - SIGNED_OFFSET is a signed byte: with weights of magnitude <= 127 a pair of products
# then stays within 16 bits, which AVX2's vpmaddubsw needs to be exact (int8_dot_16x4_signed_avx2)
SIGNED_OFFSET = 128


def offset_activation(a, offset):
    """A uint8 activation as the int32 factor of the int8 kernels' products (the intrinsics'
    declarations and topi.conv2d_nchwc_int8's): a, or a - offset."""
    return te.cast("int32", a) - offset if offset else te.cast("int32", a)


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


def _declare_u8s8_dot_16x4(name: str, emit, out_scopes, doc: str, offset: int = 0):
    """An x86 intrinsic of c[o] (+)= sum_{k<4} (int32(a[k]) - offset) * int32(b[o, k]) for 16
    int32 lanes o, a uint8 (4 bytes), b int8 ([16][4], 64 bytes, each lane's 4 bytes together);
    the int8 kernels' products (offset_activation) with or without SIGNED_OFFSET."""
    a = te.placeholder((4,), "uint8", "a")
    b = te.placeholder((16, 4), "int8", "b")
    r = te.reduce_axis((0, 4), "k")
    c = te.compute((16,), lambda o: te.sum(offset_activation(a[r.var], offset) * te.cast("int32", b[o, r.var]),
                                           axis=r), name="c")
    return declare_intrin(name, c, emit, scopes={"c": tuple(out_scopes)},
                          strides={"a": (1,), "b": (4, 1), "c": (1,)}, doc=doc)


def int8_dot_16x4(out_scopes=("local", "global")):
    """x86 AVX-512 VNNI `vpdpbusd`: c[o] (+)= sum_{k<4} int32(a[k]) * int32(b[o, k]) for 16
    int32 lanes o, a uint8 (4 bytes broadcast to every lane), b int8 ([16][4], 64 bytes)."""
    one = E.Const(1, "int32")

    def emit(ins, out, accumulate):
        va, vb = ins
        a32 = E.Call("reinterpret", [E.BufferLoad(va.buffer, [E.Ramp(va.flat(0), one, 4)])], "int32")
        b32 = E.Call("reinterpret", [E.BufferLoad(vb.buffer, [E.Ramp(vb.flat(0, 0), one, 64)])], "int32x16")
        dst = [E.Ramp(out.flat(0), one, 16)]
        acc = E.BufferLoad(out.buffer, dst) if accumulate else E.Broadcast(E.Const(0, "int32"), 16)
        dot = E.Call("llvm.x86.avx512.vpdpbusd.512", [acc, E.Broadcast(a32, 16), b32], "int32x16")
        return S.AttrStmt("tensorized", None, "vpdpbusd", S.BufferStore(out.buffer, dot, dst))

    return _declare_u8s8_dot_16x4("x86_vpdpbusd_16x4", emit, out_scopes,
                                  "AVX-512 VNNI u8 x s8 -> s32 4-way dot product, 16 lanes")


def _splat(value, dtype, lanes):
    return E.Broadcast(E.Const(value, dtype), lanes)


def _avx2_dot_16x4_emit(mnemonic: str, half_sums):
    """The emit rule of a 16-lane int8 dot product in two 256-bit halves: half_sums(x, w) -> the
    int32x8 sums of one half, x the activation's 4 bytes 8 times (uint8x32), w the half's
    weights (8 lanes x 4 bytes); the sums are stored or added to the accumulators."""
    one = E.Const(1, "int32")

    def emit(ins, out, accumulate):
        va, vb = ins
        a32 = E.Call("reinterpret", [E.BufferLoad(va.buffer, [E.Ramp(va.flat(0), one, 4)])], "int32")
        x = E.Call("reinterpret", [E.Broadcast(a32, 8)], "uint8x32")
        stores = []
        for half in range(2):                                                # lanes 8 half .. 8 half + 7
            total = half_sums(x, E.BufferLoad(vb.buffer, [E.Ramp(vb.flat(8 * half, 0), one, 32)]))
            dst = [E.Ramp(out.flat(8 * half), one, 8)]
            stores.append(S.BufferStore(out.buffer, E.Add(E.BufferLoad(out.buffer, dst), total) if accumulate
                                        else total, dst))
        return S.AttrStmt("tensorized", None, mnemonic, S.seq(*stores))
    return emit


def int8_dot_16x4_avx2(out_scopes=("local", "global")):
    """int8_dot_16x4's computation on AVX2, exact: `vpmaddubsw` multiplies unsigned by signed
    bytes and adds each pair in a saturating 16-bit lane, which 255 * 127 * 2 overflows. So a is
    split as a = lo + 128 hi (lo = a mod 128, hi = a div 128): lo's pairs reach 2 * 127 * 128 <
    2^15 and hi's 2 * 128; `vpmaddwd` by 1 and by 128 adds each output's two pairs into 32 bits.
    Per 8 lanes: two vpmaddubsw, two vpmaddwd, two adds (onnxruntime's kernel without VNNI does
    one of each and saturates)."""
    def half_sums(x, w):
        total = None
        parts = ((E.FloorMod(x, _splat(128, "uint8", 32)), 1), (E.FloorDiv(x, _splat(128, "uint8", 32)), 128))
        for part, scale in parts:
            pairs = E.Call("llvm.x86.avx2.pmadd.ub.sw", [part, w], "int16x16")
            sums = E.Call("llvm.x86.avx2.pmadd.wd", [pairs, _splat(scale, "int16", 16)], "int32x8")
            total = sums if total is None else E.Add(total, sums)
        return total

    return _declare_u8s8_dot_16x4("x86_avx2_u8s8_16x4", _avx2_dot_16x4_emit("vpmaddubsw", half_sums), out_scopes,
                                  "AVX2 u8 x s8 -> s32 4-way dot product, 16 lanes, exact")


def int8_dot_16x4_signed_avx2(out_scopes=("local", "global")):
    """c[o] (+)= sum_{k<4} (int32(a[k]) - 128) * int32(b[o, k]) on AVX2, exact for b > -128:
    a - 128 is a signed byte s, and s * b = |s| * (b with s's sign) (`vpsignb`), a product of
    an unsigned byte <= 128 and a signed one of magnitude <= 127, so `vpmaddubsw`'s pair sums
    stay within 2 * 128 * 127 < 2^15. Per 8 lanes one vpsignb, vpmaddubsw, vpmaddwd and add,
    against int8_dot_16x4_avx2's two multiplies of each: ResNet-18's int8 convs 1.2-1.3x faster
    on a Zen 3."""
    def half_sums(x, w):
        signed = E.Call("reinterpret", [E.Add(x, _splat(SIGNED_OFFSET, "uint8", 32))], "int8x32")  # a - 128
        magnitude = E.Max(signed, E.Sub(_splat(0, "int8", 32), signed))     # -128 wraps to 128 unsigned
        pairs = E.Call("llvm.x86.avx2.pmadd.ub.sw",
                       [magnitude, E.Call("llvm.x86.avx2.psign.b", [w, signed], "int8x32")], "int16x16")
        return E.Call("llvm.x86.avx2.pmadd.wd", [pairs, _splat(1, "int16", 16)], "int32x8")

    return _declare_u8s8_dot_16x4("x86_avx2_s8s8_16x4", _avx2_dot_16x4_emit("vpsignb", half_sums), out_scopes,
                                  "AVX2 (u8 - 128) x s8 -> s32 4-way dot product, 16 lanes, exact for s8 > -128",
                                  offset=SIGNED_OFFSET)


def _is_x86_avx2(target) -> bool:
    return target is not None and "+avx2" in (target.features or "") and \
        target.arch.startswith(("x86_64", "amd64"))


def signed_products(target) -> bool:
    """Whether the target's int8 kernels multiply x - 128 (with weights > -128; topi's
    weight_sums) rather than the uint8 x: on x86 with AVX2 and without VNNI, where
    int8_dot_16x4_signed_avx2 is the faster exact kernel."""
    return _is_x86_avx2(target) and "+avx512vnni" not in (target.features or "")


def int8_dot_16x4_for(target, activation_offset: int = 0):
    """The target's exact 4-way dot product over 16 int32 lanes of uint8 activations (less
    `activation_offset`) by int8 weights: VNNI's, AVX2's, or None (the schedule then
    vectorizes the lanes)."""
    features = (target.features or "") if target is not None else ""
    if activation_offset:
        return int8_dot_16x4_signed_avx2() if _is_x86_avx2(target) else None
    if "+avx512vnni" in features:
        return int8_dot_16x4()
    if _is_x86_avx2(target):
        return int8_dot_16x4_avx2()
    return None
