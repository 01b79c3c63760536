"""The int8 kernels' register tiles as AMX tile GEMMs (tir/tile_gemm.py), for x86 hosts with
AMX-INT8 (Intel Sapphire Rapids and later).

amx_conv_tile: a blocked int8 convolution's tile of `rows` output pixels of one row x `blocks`
16-channel output blocks, over its whole reduction (input-channel blocks, kernel rows, kernel
columns, channels). A tile register's row must be contiguous bytes, and in NCHWc a pixel's
`cb` channels are, and so are the kw pixels a kernel row spans: so one step's A tile is the
tile's pixels (`stride` pixels apart) each with its kw x cb bytes, and its B tile the kernel
row's packed weights ([kw][cb/4][16][4], contiguous), a k of kw x cb bytes per `tdpbusd`
(48 for a 3x3 conv of 16-channel blocks) where the VNNI kernel's step takes 4.

amx_matmul_tile: uint8 rows [rows, K] x the packed int8 panels [N/16, K/4, 16, 4], `rows`
rows x `blocks` column blocks over all of K, in steps of up to 64 bytes.

Both read uint8 activations as they are (no offset): AMX hosts have VNNI, whose kernels do too.
"""
from __future__ import annotations

from .. import te
from ..tir.tile_gemm import CALL, TILE_BYTES_PER_ROW, TILE_REGISTERS, TILE_ROWS, TileGemm
from ..tir import expr as E
from ..tir import stmt as S
from .declaration import declare_intrin

LANES = 16      # int32 lanes of an output block: a tile register's 64-byte row
MAX_BLOCKS = TILE_REGISTERS - 2


def has_amx(target) -> bool:
    """Whether `target` runs AMX-INT8 tile instructions (Target.host keeps the features only
    where the OS grants the tiles)."""
    features = (getattr(target, "features", None) or "").split(",")
    return "+amx-int8" in features and "+amx-tile" in features


def tile_fits(rows: int, blocks: int) -> bool:
    """Whether a register tile of `rows` rows x `blocks` output blocks fits the tile registers."""
    return rows <= TILE_ROWS and blocks <= MAX_BLOCKS


def conv_fits(kw: int, cb: int, dilation_w: int, rows: int, blocks: int) -> bool:
    """Whether a conv's register tile runs as amx_conv_tile: a kernel row's bytes within a tile
    row, whole 4-byte groups, one pixel step between taps, and the tile (tile_fits)."""
    return kw * cb <= TILE_BYTES_PER_ROW and cb % 4 == 0 and dilation_w == 1 and tile_fits(rows, blocks)


def _call(a, b, c, spec: TileGemm):
    args = [E.BufferLoad(r.buffer, [r.offset]) for r in (a, b, c)] + [E.Const(v, "int32") for v in spec.encode()]
    return S.Evaluate(E.Call(CALL, args, "int32"))


def amx_conv_tile(rows: int, blocks: int, cbo: int, kh: int, kw: int, cb: int, stride_w: int):
    """c[o, p, l] = sum over (i, y, x, q, k) of a[i, y, p * stride_w + x, 4q + k] * b[o, i, y, x, q, l, k]:
    a register tile of conv2d_nchwc_int8 (uint8 a, int8 b, int32 c)."""
    a = te.placeholder((cbo, kh, (rows - 1) * stride_w + kw, cb), "uint8", "a")
    b = te.placeholder((blocks, cbo, kh, kw, cb // 4, LANES, 4), "int8", "b")
    i, y, x = te.reduce_axis((0, cbo), "i"), te.reduce_axis((0, kh), "y"), te.reduce_axis((0, kw), "x")
    q, k = te.reduce_axis((0, cb // 4), "q"), te.reduce_axis((0, 4), "k")
    c = te.compute((blocks, rows, LANES), lambda o, p, l: te.sum(
        te.cast("int32", a[i.var, y.var, p * stride_w + x.var, q.var * 4 + k.var]) *
        te.cast("int32", b[o, i.var, y.var, x.var, q.var, l, k.var]), axis=[i, y, x, q, k]), name="c")

    def emit(ins, out, accumulate):
        va, vb = ins
        spec = TileGemm(rows, blocks, kw * cb, stride_w * va.strides[2],
                        ((cbo, va.strides[0], vb.strides[1]), (kh, va.strides[1], vb.strides[2])),
                        vb.strides[0], 4 * out.strides[1], 4 * out.strides[0], accumulate)
        return S.AttrStmt("tensorized", None, "tdpbusd", _call(va, vb, out, spec))

    # a's pixels hold cb contiguous channels, b's kernel row is contiguous 64-byte rows, c's rows 64 bytes
    return declare_intrin(f"x86_amx_conv_{rows}x{blocks}_{cbo}x{kh}x{kw}x{cb}_s{stride_w}", c, emit,
                          scopes={"c": ("local", "global")},
                          strides={"a": (None, None, cb, 1), "b": (None, None, None, cb * 16, 64, 4, 1),
                                   "c": (None, LANES, 1)},
                          doc="AMX-INT8 tile GEMM over a conv register tile's whole reduction")


def matmul_step_bytes(k: int) -> int:
    """Bytes of k per tile step: the largest multiple of 4 up to a tile row dividing k."""
    return max(s for s in range(4, TILE_BYTES_PER_ROW + 1, 4) if k % s == 0)


def amx_matmul_tile(rows: int, blocks: int, k: int):
    """c[p, o, l] = sum over (q, j) of a[p, 4q + j] * b[o, q, l, j]: a register tile of
    matmul_int8_panels (uint8 a [rows, K], int8 b [blocks, K/4, 16, 4], int32 c)."""
    a = te.placeholder((rows, k), "uint8", "a")
    b = te.placeholder((blocks, k // 4, LANES, 4), "int8", "b")
    q, j = te.reduce_axis((0, k // 4), "q"), te.reduce_axis((0, 4), "j")
    c = te.compute((rows, blocks, LANES), lambda p, o, l: te.sum(
        te.cast("int32", a[p, q.var * 4 + j.var]) * te.cast("int32", b[o, q.var, l, j.var]), axis=[q, j]), name="c")
    step = matmul_step_bytes(k)

    def emit(ins, out, accumulate):
        va, vb = ins
        spec = TileGemm(rows, blocks, step, va.strides[0], ((k // step, step, step * LANES),),
                        vb.strides[0], 4 * out.strides[0], 4 * out.strides[1], accumulate)
        return S.AttrStmt("tensorized", None, "tdpbusd", _call(va, vb, out, spec))

    return declare_intrin(f"x86_amx_matmul_{rows}x{blocks}_k{k}", c, emit, scopes={"c": ("local", "global")},
                          strides={"a": (None, 1), "b": (None, 4 * LANES, 4, 1), "c": (None, None, 1)},
                          doc="AMX-INT8 tile GEMM over a matmul register tile's whole k")
