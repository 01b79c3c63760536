"""Winograd F(2x2, 3x3) and F(4x4, 3x3) convolutions (kernel and numpy semantics) against
onnxruntime's Conv."""
import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

from vdla.compiler import te, topi
from vdla.driver.host_ops.layout import pack, unpack
from vdla.driver.host_ops.winograd import conv_winograd_nchwc, transform_weight


def ort_conv(x, w, b, pads):
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=list(pads))
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(g, ir_version=9, opset_imports=[helper.make_opsetid("", 17)])
    return onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]


CASES = [
    # N, C, H, W, OC, pads [t, l, b, r], block
    (1, 32, 9, 11, 48, (1, 1, 1, 1), 16),     # 5x6 tiles: the whole-image schedule
    (2, 32, 20, 15, 32, (1, 0, 2, 1), 16),    # 21x14 output (odd rows): per row of tiles
    (1, 16, 12, 12, 24, (0, 0, 0, 0), 8),     # 8-lane blocks, an odd number of output blocks
    (1, 64, 30, 30, 64, (1, 1, 1, 1), 16),    # 15 tiles a row: a register tile plus a tail
    (1, 32, 3, 4, 32, (0, 0, 0, 0), 16),      # one output row, an odd output width
    (1, 128, 20, 12, 144, (1, 1, 1, 1), 16),  # a filter beyond 1 MB: the GEMM prefetches its next slice
]


@pytest.mark.parametrize("tile", [2, 4])
@pytest.mark.parametrize("n,c,h,w,oc,pads,block", CASES)
def test_winograd_kernel_and_semantics_match_onnxruntime(n, c, h, w, oc, pads, block, tile, rng,
                                                         compile_run):
    xa = rng.standard_normal((n, c, h, w)).astype("float32")
    wa = (rng.standard_normal((oc, c, 3, 3)) * 0.2).astype("float32")
    ba = rng.standard_normal(oc).astype("float32")
    ref = ort_conv(xa, wa, ba, pads)
    tol = dict(rtol=1e-4, atol=1e-4 * float(np.abs(ref).max()))
    xp, u = pack(xa, block), transform_weight(wa, block, block, tile)
    x = te.placeholder(xp.shape, "float32", "x")
    ut = te.placeholder(u.shape, "float32", "u")
    bt = te.placeholder((1, oc // block, 1, 1, block), "float32", "b")
    y = topi.relu(topi.add(topi.conv2d_nchwc_winograd(x, ut, pads=pads), bt))   # with an epilogue
    got = compile_run(y, [x, ut, bt], [xp, u, pack(ba.reshape(1, oc, 1, 1), block)])
    np.testing.assert_allclose(unpack(got), np.maximum(ref, 0), **tol)
    semantics = conv_winograd_nchwc(xp, u, pads) + pack(ba.reshape(1, oc, 1, 1), block)
    np.testing.assert_allclose(unpack(semantics), ref, **tol)


@pytest.mark.parametrize("tile", [2, 4])
@pytest.mark.parametrize("h,w", [(8, 8), (16, 20), (40, 44)])    # whole-image and per-row schedules
def test_winograd_kernel_as_the_group_output(h, w, tile, rng, compile_run):
    """No epilogue: the output transform itself is the scheduled output stage."""
    xa = rng.standard_normal((1, 32, h, w)).astype("float32")
    wa = (rng.standard_normal((16, 32, 3, 3)) * 0.2).astype("float32")
    ref = ort_conv(xa, wa, np.zeros(16, "float32"), (1, 1, 1, 1))
    xp, u = pack(xa, 16), transform_weight(wa, 16, 16, tile)
    x, ut = te.placeholder(xp.shape, "float32", "x"), te.placeholder(u.shape, "float32", "u")
    got = compile_run(topi.conv2d_nchwc_winograd(x, ut, pads=1), [x, ut], [xp, u])
    np.testing.assert_allclose(unpack(got), ref, rtol=1e-4, atol=1e-4 * float(np.abs(ref).max()))


@pytest.mark.parametrize("tile", [2, 4])
@pytest.mark.parametrize("whole, row_group", [(False, 4), (False, 7), (True, 1)])
def test_a_register_tile_of_two_rows_of_tiles_computes_onnxruntimes(whole, row_group, tile, rng, host):
    """tile_rows 2 over 7 rows of tiles: a row left over in each step of 4 rows (4 + 3), of all 7,
    and of the whole image; the row tests of the register tile are unswitched (tir.passes.unswitch)."""
    from vdla.compiler import build
    from vdla.compiler.topi.cpu_knobs import WinogradKnobs
    h = 7 * tile
    xa = rng.standard_normal((1, 32, h, h)).astype("float32")
    wa = (rng.standard_normal((32, 32, 3, 3)) * 0.2).astype("float32")
    ref = ort_conv(xa, wa, np.zeros(32, "float32"), (1, 1, 1, 1))
    xp, u = pack(xa, 16), transform_weight(wa, 16, 16, tile)
    x, ut = te.placeholder(xp.shape, "float32", "x"), te.placeholder(u.shape, "float32", "u")
    y = topi.conv2d_nchwc_winograd(x, ut, pads=1)
    s = topi.schedule_for([y], host, WinogradKnobs(whole, 7, 2, row_group, 2))
    got = np.zeros(y.shape, "float32")
    build(s, [x, ut, y], host, "k", check=True).load().run("k", [xp, u, got])
    np.testing.assert_allclose(unpack(got), ref, rtol=1e-4, atol=1e-4 * float(np.abs(ref).max()))


def test_transform_and_operator_reject_what_they_cannot_do(rng):
    with pytest.raises(ValueError, match="expected a 3x3 filter, got 5x5"):
        transform_weight(np.zeros((16, 16, 5, 5), "float32"), 16, 16)
    with pytest.raises(ValueError, match="not multiples of the blocks"):
        transform_weight(np.zeros((24, 16, 3, 3), "float32"), 16, 16)
    x = te.placeholder((1, 2, 8, 8, 16), "float32", "x")
    with pytest.raises(ValueError, match=r"expected \[alpha, alpha, OC/ob, 2, 16, ob\] with alpha 4 or 6"):
        topi.conv2d_nchwc_winograd(x, te.placeholder((4, 4, 1, 1, 16, 16), "float32", "u"))
    with pytest.raises(ValueError, match=r"with alpha 4 or 6"):
        topi.conv2d_nchwc_winograd(x, te.placeholder((5, 5, 1, 2, 16, 16), "float32", "u"))
    with pytest.raises(ValueError, match=r"no F\(3x3, 3x3\) transform; tiles \[2, 4\]"):
        transform_weight(np.zeros((16, 16, 3, 3), "float32"), 16, 16, 3)
    with pytest.raises(TypeError, match="float32 only"):
        topi.conv2d_nchwc_winograd(te.placeholder((1, 2, 8, 8, 16), "int8", "q"),
                                   te.placeholder((4, 4, 1, 2, 16, 16), "int8", "v"))


@pytest.mark.parametrize("oc,tile,prefetches", [(144, 2, True), (144, 4, True), (128, 2, False)])
def test_a_gemm_whose_filter_streams_prefetches_its_next_slice(oc, tile, prefetches, host):
    """Above cpu_knobs.WINOGRAD_ROW_GROUP_FILTER_BYTES (1 MB: 16 x 128 x 144 floats of F(2x2) filter
    is more, 16 x 128 x 128 is not) the GEMM reads each (e, u) slice of the filter from memory:
    it prefetches the lines of the next u beside the FMAs on this one."""
    from vdla.compiler import build
    x = te.placeholder((1, 8, 20, 12, 16), "float32", "x")
    u = te.placeholder((tile + 2, tile + 2, oc // 16, 8, 16, 16), "float32", "u")
    y = topi.conv2d_nchwc_winograd(x, u, pads=1)
    ir = build(topi.schedule_for([y], host), [x, u, y], host, "k").loop_ir
    assert ("prefetch(u[" in ir) == prefetches
    if prefetches:      # one u later: oc / 16 x 8 x 16 x 16 filter values on
        assert f"+ {oc // 16 * 8 * 256})], 2)" in ir
