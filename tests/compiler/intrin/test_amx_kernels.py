"""The int8 kernels' register tiles as AMX tile GEMMs (intrin/amx.py): exact against numpy's
integer products on a host with AMX-INT8; the kernels keep VNNI where a tile does not fit."""
from __future__ import annotations

import numpy as np
import pytest

from vdla.compiler import build, te, topi
from vdla.compiler.intrin import amx
from vdla.compiler.target import Target
from vdla.compiler.topi.cpu_knobs import DirectConvKnobs

HOST = Target.host(threads=2)
needs_amx = pytest.mark.skipif(not amx.has_amx(HOST), reason="host has no AMX-INT8 tiles the OS grants")


def _conv_reference(xa, wa, stride, pad):
    """numpy: x [1, C/cb, H, W, cb] uint8, w [OC, C, K, K] int8 -> [1, OC/16, OH, OW, 16] int64."""
    _, cbo, h, w, cb = xa.shape
    oc, c, k, _ = wa.shape
    x = np.pad(xa.transpose(0, 1, 4, 2, 3).reshape(c, h, w).astype(np.int64), ((0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
    out = np.zeros((oc, oh, ow), np.int64)
    for ky in range(k):
        for kx in range(k):
            window = x[:, ky:ky + stride * (oh - 1) + 1:stride, kx:kx + stride * (ow - 1) + 1:stride]
            out += np.einsum("oc,chw->ohw", wa[:, :, ky, kx].astype(np.int64), window)
    return out.reshape(oc // 16, 16, oh, ow).transpose(0, 2, 3, 1)[None]


def _pack(wa, cb):
    """[OC, C, K, K] -> [OC/16, C/cb, K, K, cb/4, 16, 4], written out by hand from the layout."""
    oc, c, k, _ = wa.shape
    return np.ascontiguousarray(wa.reshape(oc // 16, 16, c // cb, cb // 4, 4, k, k).transpose(0, 2, 5, 6, 3, 1, 4))


def _int8_conv(c, cb, h, w, oc, k, stride, pad, knobs, rng, dilation=1):
    x = te.placeholder((1, c // cb, h, w, cb), "uint8", "x")
    wp = te.placeholder((oc // 16, c // cb, k, k, cb // 4, 16, 4), "int8", "wp")
    y = topi.conv2d_nchwc_int8(x, wp, strides=stride, pads=pad, dilations=dilation)
    kern = build(topi.schedule_for([y], HOST, knobs), [x, wp, y], HOST, "q")
    xa = rng.integers(0, 256, x.shape).astype(np.uint8)
    wa = rng.integers(-128, 128, (oc, c, k, k)).astype(np.int8)
    out = np.zeros(y.shape, np.int32)
    kern.load().run("q", [xa, _pack(wa, cb), out])
    return kern, out, xa, wa


@needs_amx
@pytest.mark.parametrize("c,cb,h,w,oc,k,stride,pad,tile", [
    (32, 16, 9, 14, 32, 3, 1, 1, (14, 2)),      # a 3x3 row: 48 bytes of k a step
    (64, 16, 7, 7, 64, 3, 1, 1, (7, 4)),        # four accumulator tiles
    (16, 16, 8, 8, 64, 1, 2, 0, (4, 4)),        # 1x1, stride 2: A rows 32 bytes apart
    (32, 16, 11, 11, 32, 3, 2, 1, (3, 1)),      # 3x3 stride 2, a tile of 3 pixels
    (16, 8, 6, 10, 32, 3, 1, 1, (10, 2)),       # 8-channel blocks: 24 bytes a step
    (8, 4, 9, 9, 16, 5, 1, 2, (9, 1)),          # 4-channel blocks, a 5-wide kernel: 20 bytes
])
def test_conv_tiles_equal_numpy(c, cb, h, w, oc, k, stride, pad, tile, rng):
    kern, out, xa, wa = _int8_conv(c, cb, h, w, oc, k, stride, pad, DirectConvKnobs(*tile), rng)
    assert "tdpbusd" in kern.llvm_ir and "vpdpbusd" not in kern.llvm_ir
    np.testing.assert_array_equal(out, _conv_reference(xa, wa, stride, pad))


@needs_amx
@pytest.mark.parametrize("c,cb,h,w,oc,k,stride,pad,tile,dilation,why", [
    (32, 16, 9, 9, 16, 7, 1, 3, (3, 1), 1, "a 7-tap row of 16 channels is 112 bytes, over a tile row's 64"),
    (16, 16, 20, 20, 16, 3, 1, 1, (20, 1), 1, "20 pixels are more than a tile's 16 rows"),
    (16, 16, 9, 9, 16, 3, 1, 2, (9, 1), 2, "dilated taps are not one pixel apart"),
])
def test_tiles_that_do_not_fit_keep_the_vnni_kernel(c, cb, h, w, oc, k, stride, pad, tile, dilation, why, rng):
    kern, out, xa, wa = _int8_conv(c, cb, h, w, oc, k, stride, pad, DirectConvKnobs(*tile), rng, dilation)
    assert "tdpbusd" not in kern.llvm_ir.replace("vpdpbusd", ""), why
    if dilation == 1:
        np.testing.assert_array_equal(out, _conv_reference(xa, wa, stride, pad))


@needs_amx
@pytest.mark.parametrize("rows,k,n,tile", [(32, 192, 64, (16, 4)), (16, 24, 32, (8, 2)), (12, 320, 48, (12, 3))])
def test_matmul_tiles_equal_numpy(rows, k, n, tile, rng):
    """uint8 rows x int8 panels over all of k in steps of the largest multiple of 4 up to 64
    dividing it (64, 24, 64)."""
    from vdla.driver.host_ops.layout import pack_matmul_weight_int8
    a = te.placeholder((rows, k), "uint8", "a")
    w = te.placeholder((n // 16, k // 4, 16, 4), "int8", "w")
    y = topi.matmul_int8_panels(a, w)
    kern = build(topi.schedule_for([y], HOST, DirectConvKnobs(*tile)), [a, w, y], HOST, "m")
    assert "tdpbusd" in kern.llvm_ir and "vpdpbusd" not in kern.llvm_ir
    aa = rng.integers(0, 256, (rows, k)).astype(np.uint8)
    wk = rng.integers(-128, 128, (k, n)).astype(np.int8)
    out = np.zeros((rows, n // 16, 16), np.int32)
    kern.load().run("m", [aa, pack_matmul_weight_int8(wk), out])
    np.testing.assert_array_equal(out.reshape(rows, n), aa.astype(np.int64) @ wk.astype(np.int64))


def test_a_target_has_amx_only_with_both_features():
    assert amx.has_amx(Target("x86_64-unknown-linux-gnu", "sapphirerapids", "+avx512f,+amx-tile,+amx-int8"))
    assert not amx.has_amx(Target("x86_64-unknown-linux-gnu", "sapphirerapids", "+avx512f,+amx-tile,-amx-int8"))
    assert not amx.has_amx(Target("x86_64-unknown-linux-gnu", "x86-64", ""))


def test_what_fits_a_conv_tile():
    assert amx.conv_fits(kw=3, cb=16, dilation_w=1, rows=14, blocks=4)
    assert not amx.conv_fits(kw=5, cb=16, dilation_w=1, rows=14, blocks=4)    # 80 bytes
    assert not amx.conv_fits(kw=3, cb=16, dilation_w=2, rows=14, blocks=4)
    assert not amx.conv_fits(kw=3, cb=16, dilation_w=1, rows=17, blocks=4)
    assert not amx.conv_fits(kw=3, cb=16, dilation_w=1, rows=16, blocks=7)    # 7 + A + B > 8
    assert amx.tile_fits(16, 6) and not amx.tile_fits(16, 7) and not amx.tile_fits(17, 1)
    assert amx.matmul_step_bytes(768) == 64 and amx.matmul_step_bytes(24) == 24 and amx.matmul_step_bytes(100) == 20
