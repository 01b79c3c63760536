"""Convolution, pooling, dense/matmul, softmax and batch-norm against onnxruntime / numpy."""
import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

from vdla.compiler import te, topi
from vdla.compiler.topi.schedule_cpu import cpu_anchor


def ort_run(op, inputs, **attrs):
    """Run one ONNX node with onnxruntime (the oracle)."""
    names = [f"i{k}" for k in range(len(inputs))]
    node = helper.make_node(op, names, ["out"], **attrs)
    types = {np.dtype("float32"): TensorProto.FLOAT, np.dtype("int8"): TensorProto.INT8,
             np.dtype("int32"): TensorProto.INT32}
    g = helper.make_graph([node], "g",
                          [helper.make_tensor_value_info(n, types[a.dtype], a.shape) for n, a in zip(names, inputs)],
                          [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    model = helper.make_model(g, ir_version=9, opset_imports=[helper.make_opsetid("", 17)])
    opts = onnxruntime.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = onnxruntime.InferenceSession(model.SerializeToString(), opts)
    return sess.run(None, dict(zip(names, inputs)))[0]


CONV_CASES = [
    # (N, C, H, W), OC, (KH, KW), strides, pads [t, l, b, r], dilations, groups
    ((1, 3, 13, 11), 8, (3, 3), (1, 1), [1, 1, 1, 1], (1, 1), 1),
    ((2, 6, 9, 10), 4, (3, 2), (2, 1), [1, 0, 2, 1], (1, 1), 2),
    ((1, 8, 12, 12), 8, (3, 3), (2, 2), [1, 1, 1, 1], (1, 1), 8),     # depthwise
    ((1, 5, 15, 14), 7, (3, 3), (1, 2), [2, 2, 2, 2], (2, 2), 1),     # dilation
    ((1, 16, 7, 7), 24, (1, 1), (1, 1), [0, 0, 0, 0], (1, 1), 1),
]


@pytest.mark.parametrize("shape,oc,k,strides,pads,dil,groups", CONV_CASES)
def test_conv2d_nchw(shape, oc, k, strides, pads, dil, groups, rng, compile_run):
    x = te.placeholder(shape, "float32", "x")
    w = te.placeholder((oc, shape[1] // groups) + k, "float32", "w")
    y = topi.conv2d_nchw(x, w, strides=strides, pads=pads, dilations=dil, groups=groups)
    xa = rng.standard_normal(x.shape).astype("float32")
    wa = rng.standard_normal(w.shape).astype("float32")
    ref = ort_run("Conv", [xa, wa], strides=list(strides), pads=pads, dilations=list(dil), group=groups)
    np.testing.assert_allclose(compile_run(y, [x, w], [xa, wa]), ref, rtol=1e-4, atol=1e-4)


def test_conv2d_bias_residual_relu_group(rng, compile_run):
    """conv -> + bias -> + residual -> relu as one fused group."""
    x = te.placeholder((1, 8, 10, 9), "float32", "x")
    w = te.placeholder((8, 8, 3, 3), "float32", "w")
    b = te.placeholder((8, 1, 1), "float32", "b")
    r = te.placeholder((1, 8, 10, 9), "float32", "r")
    y = topi.relu(topi.add(topi.add(topi.conv2d_nchw(x, w, pads=1), b), r))
    xa, wa, ba, ra = (rng.standard_normal(t.shape).astype("float32") for t in (x, w, b, r))
    ref = np.maximum(ort_run("Conv", [xa, wa], pads=[1, 1, 1, 1]) + ba + ra, 0)
    np.testing.assert_allclose(compile_run(y, [x, w, b, r], [xa, wa, ba, ra]), ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("c,oc,groups,stride,cb,ob", [
    (32, 32, 2, 1, 16, 16),     # a block a group (RegNet's width-16 groups, at block 8)
    (32, 64, 2, 2, 8, 16),      # two output blocks a group: a register tile may hold both
    (48, 24, 3, 1, 8, 8),       # more input than output channels a group
])
def test_grouped_conv2d_nchwc_matches_onnxruntime(c, oc, groups, stride, cb, ob, rng, compile_run):
    """Each group's channels are whole blocks: output block o reads only its group's input
    blocks (weight [OC/ob, C/groups/cb, KH, KW, cb, ob]); the result is onnxruntime's Conv
    with `group`."""
    h, w, k = 9, 10, 3
    xa = rng.standard_normal((1, c, h, w)).astype("float32")
    wa = rng.standard_normal((oc, c // groups, k, k)).astype("float32")
    xc = te.placeholder((1, c // cb, h, w, cb), "float32", "xc")
    wc = te.placeholder((oc // ob, c // groups // cb, k, k, cb, ob), "float32", "wc")
    y = topi.conv2d_nchwc(xc, wc, strides=stride, pads=1, groups=groups)
    xpk = xa.reshape(1, c // cb, cb, h, w).transpose(0, 1, 3, 4, 2)
    wpk = wa.reshape(oc // ob, ob, c // groups // cb, cb, k, k).transpose(0, 2, 4, 5, 3, 1)
    out = compile_run(y, [xc, wc], [xpk, wpk])
    back = out.transpose(0, 1, 4, 2, 3).reshape(1, oc, *out.shape[2:4])
    ref = ort_run("Conv", [xa, wa], strides=[stride] * 2, pads=[1] * 4, group=groups)
    np.testing.assert_allclose(back, ref, rtol=1e-4, atol=1e-4)


def test_grouped_conv2d_nchwc_refuses_groups_that_split_a_block():
    xc = te.placeholder((1, 3, 5, 5, 8), "float32", "xc")
    with pytest.raises(ValueError, match="groups=2 does not split"):
        topi.conv2d_nchwc(xc, te.placeholder((2, 1, 3, 3, 8, 8), "float32", "wc"), groups=2)


@pytest.mark.parametrize("c,h,w,oc,k,stride,pad,cb,ob", [
    (16, 9, 11, 32, 3, 1, 1, 8, 16),
    (8, 14, 14, 16, 3, 2, 1, 8, 16),
    (4, 7, 5, 8, 1, 1, 0, 4, 8),
    (48, 7, 7, 128, 3, 1, 1, 16, 16),   # an image accumulator, prefetching each next input block's weights
])
def test_conv2d_nchwc_matches_nchw(c, h, w, oc, k, stride, pad, cb, ob, rng, compile_run):
    x = te.placeholder((1, c, h, w), "float32", "x")
    wt = te.placeholder((oc, c, k, k), "float32", "w")
    xc = te.placeholder((1, c // cb, h, w, cb), "float32", "xc")
    wc = te.placeholder((oc // ob, c // cb, k, k, cb, ob), "float32", "wc")
    y = topi.relu(topi.conv2d_nchwc(xc, wc, strides=stride, pads=pad))
    xa = rng.standard_normal(x.shape).astype("float32")
    wa = rng.standard_normal(wt.shape).astype("float32")
    # packing is checked too: pack with topi, convolve blocked, unpack, compare to ORT
    xpk = compile_run(topi.nchw_to_nchwc(x, cb), [x], [xa])
    wpk = compile_run(topi.pack_weight_nchwc(wt, cb, ob), [wt], [wa])
    out = compile_run(y, [xc, wc], [xpk, wpk])
    yc = te.placeholder(out.shape, "float32", "yc")
    back = compile_run(topi.nchwc_to_nchw(yc), [yc], [out])
    ref = np.maximum(ort_run("Conv", [xa, wa], strides=[stride] * 2, pads=[pad] * 4), 0)
    np.testing.assert_allclose(back, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("c,h,w,k,stride,cb", [(32, 14, 13, 3, 1, 16), (16, 9, 9, 3, 2, 8)])
def test_depthwise_nchwc(c, h, w, k, stride, cb, rng, compile_run):
    x = te.placeholder((1, c // cb, h, w, cb), "float32", "x")
    wt = te.placeholder((c // cb, 1, k, k, 1, cb), "float32", "w")
    y = topi.depthwise_conv2d_nchwc(x, wt, strides=stride, pads=1)
    xa = rng.standard_normal((1, c, h, w)).astype("float32")
    wa = rng.standard_normal((c, 1, k, k)).astype("float32")
    xpk = xa.reshape(1, c // cb, cb, h, w).transpose(0, 1, 3, 4, 2)
    wpk = wa.reshape(c // cb, cb, 1, k, k).transpose(0, 2, 3, 4, 1)[:, :, :, :, None, :]
    out = compile_run(y, [x, wt], [xpk, wpk])
    ref = ort_run("Conv", [xa, wa], strides=[stride] * 2, pads=[1] * 4, group=c)
    n, cbo, oh, ow, b = out.shape
    np.testing.assert_allclose(out.transpose(0, 1, 4, 2, 3).reshape(1, c, oh, ow), ref, rtol=1e-4, atol=1e-4)


def test_conv2d_int8(rng, compile_run):
    x = te.placeholder((1, 5, 9, 8), "int8", "x")
    w = te.placeholder((6, 5, 3, 3), "int8", "w")
    y = topi.conv2d_int8(x, w, strides=1, pads=1)
    xa = rng.integers(-128, 128, x.shape).astype("int8")
    wa = rng.integers(-128, 128, w.shape).astype("int8")
    ref = ort_run("Conv", [xa.astype("float32"), wa.astype("float32")], pads=[1] * 4)
    out = compile_run(y, [x, w], [xa, wa])
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, ref.astype(np.int64))


POOL_CASES = [
    ("max", 3, 2, [1, 1, 1, 1], False, False),
    ("max", 2, 2, [0, 0, 0, 0], True, False),
    ("avg", 3, 2, [1, 1, 1, 1], False, False),
    ("avg", 3, 2, [1, 0, 1, 1], False, True),
    ("avg", 3, 2, [0, 0, 0, 0], True, False),
]


@pytest.mark.parametrize("shape,axis", [((6, 197), -1), ((6, 40), -1), ((2, 6, 5), 1)])
@pytest.mark.parametrize("lanes", [None, 16], ids=["rows", "lanes"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "logsoftmax"])
def test_softmax_special_values(shape, axis, lanes, log, rng, compile_run):
    """Rows with a NaN, with masked (-inf) entries, all -inf, with +inf, and spread so far that
    most exponentials underflow, against numpy: the row max ignores NaN (te.fmax) and the
    exponentials carry it, so a NaN still fills its row; masked entries come out exactly 0
    (softmax) or -inf (LogSoftmax)."""
    x = te.placeholder(shape, "float32", "x")
    xa = np.moveaxis(rng.standard_normal(shape).astype("float32") * 4, axis, -1).copy()
    rows = xa.reshape(-1, xa.shape[-1])
    rows[0, 3] = np.nan
    rows[1, ::3] = -np.inf
    rows[2, :] = -np.inf
    rows[3, 1] = np.inf
    rows[4] *= 1e4
    xa = np.moveaxis(xa, -1, axis).copy()
    with np.errstate(invalid="ignore", over="ignore"):
        shifted = xa - xa.max(axis, keepdims=True)
        e = np.exp(shifted)
        want = shifted - np.log(e.sum(axis, keepdims=True)) if log else e / e.sum(axis, keepdims=True)
    got = compile_run(topi.softmax(x, axis, lanes, log=log), [x], [xa])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    masked = np.isneginf(xa) & ~np.isnan(want)
    assert masked.any() and (got[masked] == (-np.inf if log else 0)).all()


@pytest.mark.parametrize("kind,k,s,pads,ceil,cip", POOL_CASES)
def test_pool(kind, k, s, pads, ceil, cip, rng, compile_run):
    x = te.placeholder((1, 3, 11, 10), "float32", "x")
    if kind == "max":
        y = topi.max_pool2d(x, k, s, pads, ceil_mode=ceil)
        ref_attrs = {}
    else:
        y = topi.avg_pool2d(x, k, s, pads, count_include_pad=cip, ceil_mode=ceil)
        ref_attrs = {"count_include_pad": int(cip)}
    xa = rng.standard_normal(x.shape).astype("float32")
    ref = ort_run("MaxPool" if kind == "max" else "AveragePool", [xa], kernel_shape=[k, k], strides=[s, s],
                  pads=pads, ceil_mode=int(ceil), **ref_attrs)
    np.testing.assert_allclose(compile_run(y, [x], [xa]), ref, rtol=1e-5, atol=1e-6)


def test_global_pools(rng, compile_run):
    x = te.placeholder((2, 5, 7, 3), "float32", "x")
    xa = rng.standard_normal(x.shape).astype("float32")
    np.testing.assert_allclose(compile_run(topi.global_avg_pool2d(x), [x], [xa]),
                               xa.mean(axis=(2, 3), keepdims=True), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(compile_run(topi.global_max_pool2d(x), [x], [xa]),
                               xa.max(axis=(2, 3), keepdims=True))


@pytest.mark.parametrize("m,k,n,bias", [(1, 512, 1000, True), (7, 33, 19, True), (4, 256, 9, False)])
def test_dense(m, k, n, bias, rng, compile_run):
    """K % 16 == 0 takes the two-stage (row-factored) form; the others the direct one."""
    x, w, b = te.placeholder((m, k), "float32", "x"), te.placeholder((n, k), "float32", "w"), \
        te.placeholder((n,), "float32", "b")
    y = topi.dense(x, w, b if bias else None)
    xa, wa, ba = (rng.standard_normal(t.shape).astype("float32") for t in (x, w, b))
    args, arrays = ([x, w, b], [xa, wa, ba]) if bias else ([x, w], [xa, wa])
    np.testing.assert_allclose(compile_run(y, args, arrays), xa @ wa.T + (ba if bias else 0), rtol=1e-4, atol=1e-4)


def test_matmul_batched_broadcast(rng, compile_run):
    a, b = te.placeholder((2, 1, 5, 7), "float32", "a"), te.placeholder((3, 7, 4), "float32", "b")
    y = topi.matmul(a, b)
    aa, ba = rng.standard_normal(a.shape).astype("float32"), rng.standard_normal(b.shape).astype("float32")
    np.testing.assert_allclose(compile_run(y, [a, b], [aa, ba]), aa @ ba, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a_shape, b_shape", [
    ((37, 48), (48, 40)),                # row and column tails of the 8 x 16 register tile
    ((1, 3, 21, 16), (1, 3, 16, 37)),    # attention's q k^T: batched, a column tail
    ((2, 1, 5, 7), (3, 7, 9)),           # broadcast batch, fewer rows than a tile
    ((4, 6), (6, 3)),                    # fewer columns than a vector
], ids=["tails", "batched", "broadcast", "narrow"])
def test_matmul_register_tiles_with_an_epilogue(a_shape, b_shape, rng, compile_run):
    """The matmul anchor's micro-kernel (conv_schedules._schedule_matmul), its tails, and the
    bias and residual it computes at each tile."""
    a, b = te.placeholder(a_shape, "float32", "a"), te.placeholder(b_shape, "float32", "b")
    aa, ba = rng.standard_normal(a_shape).astype("float32"), rng.standard_normal(b_shape).astype("float32")
    want = aa @ ba
    bias, res = te.placeholder(want.shape[-1:], "float32", "c"), te.placeholder(want.shape, "float32", "r")
    ca, ra = rng.standard_normal(bias.shape).astype("float32"), rng.standard_normal(res.shape).astype("float32")
    y = topi.add(topi.add(topi.matmul(a, b), bias), res)
    assert cpu_anchor([y])[0] == "matmul"
    np.testing.assert_allclose(compile_run(y, [a, b, bias, res], [aa, ba, ca, ra]), want + ca + ra,
                               rtol=1e-5, atol=1e-5)


def test_integer_matmul_keeps_the_generic_schedule(rng, compile_run):
    a, b = te.placeholder((5, 8), "int32", "a"), te.placeholder((8, 20), "int32", "b")
    aa, ba = rng.integers(-50, 50, a.shape).astype("int32"), rng.integers(-50, 50, b.shape).astype("int32")
    y = topi.matmul(a, b)
    assert cpu_anchor([y]) is None
    np.testing.assert_array_equal(compile_run(y, [a, b], [aa, ba]), aa @ ba)


def test_dense_int8(rng, compile_run):
    x, w = te.placeholder((3, 45), "int8", "x"), te.placeholder((10, 45), "int8", "w")
    xa, wa = rng.integers(-128, 128, x.shape).astype("int8"), rng.integers(-128, 128, w.shape).astype("int8")
    np.testing.assert_array_equal(compile_run(topi.dense(x, w), [x, w], [xa, wa]),
                                  xa.astype(np.int32) @ wa.astype(np.int32).T)


@pytest.mark.parametrize("shape,axis", [((3, 17), -1), ((2, 5, 6), 1), ((9,), 0), ((2, 3, 197), -1),
                                        ((4, 64), 1), ((5, 31), -1)])
@pytest.mark.parametrize("lanes", [None, 16], ids=["rows", "lanes"])
def test_softmax(shape, axis, lanes, rng, compile_run):
    """lanes=16 (the CPU rule's form): rows of at least 32 reduce in vector lanes first, a
    partial last slice (197) read through a guarded select."""
    x = te.placeholder(shape, "float32", "x")
    xa = rng.standard_normal(shape).astype("float32") * 4
    e = np.exp(xa - xa.max(axis, keepdims=True))
    np.testing.assert_allclose(compile_run(topi.softmax(x, axis, lanes), [x], [xa]), e / e.sum(axis, keepdims=True),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind,k,s,pads,ceil,cip", POOL_CASES)
@pytest.mark.parametrize("h,w", [(11, 10), (9, 37)])   # rows of 5 and 19 outputs: tiles with and without a tail
def test_pool_nchwc(kind, k, s, pads, ceil, cip, h, w, rng, compile_run):
    """The blocked pools (their own register-tiled schedule) against onnxruntime on NCHW."""
    x = te.placeholder((1, 2, h, w, 16), "float32", "x")
    xa = rng.standard_normal((1, 32, h, w)).astype("float32")
    packed = np.ascontiguousarray(xa.reshape(1, 2, 16, h, w).transpose(0, 1, 3, 4, 2))
    if kind == "max":
        y, ref_attrs = topi.max_pool2d(x, k, s, pads, ceil_mode=ceil, layout="NCHWc"), {}
    else:
        y = topi.avg_pool2d(x, k, s, pads, count_include_pad=cip, ceil_mode=ceil, layout="NCHWc")
        ref_attrs = {"count_include_pad": int(cip)}
    ref = ort_run("MaxPool" if kind == "max" else "AveragePool", [xa], kernel_shape=[k, k], strides=[s, s],
                  pads=pads, ceil_mode=int(ceil), **ref_attrs)
    got = compile_run(y, [x], [packed])
    np.testing.assert_allclose(got.transpose(0, 1, 4, 2, 3).reshape(ref.shape), ref, rtol=1e-5, atol=1e-6)


def test_batch_norm(rng, compile_run):
    x = te.placeholder((2, 4, 3, 5), "float32", "x")
    ps = [te.placeholder((4,), "float32", n) for n in ("g", "b", "m", "v")]
    y = topi.batch_norm_inference(x, *ps, epsilon=1e-3)
    xa = rng.standard_normal(x.shape).astype("float32")
    g, b, m = (rng.standard_normal(4).astype("float32") for _ in range(3))
    v = rng.uniform(0.5, 2, 4).astype("float32")
    ref = (xa - m[:, None, None]) / np.sqrt(v[:, None, None] + 1e-3) * g[:, None, None] + b[:, None, None]
    np.testing.assert_allclose(compile_run(y, [x] + ps, [xa, g, b, m, v]), ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool_nchwc_matches_nchw(kind, rng, compile_run):
    x = te.placeholder((1, 32, 13, 12), "float32", "x")
    xc = te.placeholder((1, 2, 13, 12, 16), "float32", "xc")
    pool = topi.max_pool2d if kind == "max" else topi.avg_pool2d
    xa = rng.standard_normal(x.shape).astype("float32")
    xpk = np.ascontiguousarray(xa.reshape(1, 2, 16, 13, 12).transpose(0, 1, 3, 4, 2))
    want = compile_run(pool(x, 3, 2, [1, 1, 1, 1]), [x], [xa])
    got = compile_run(pool(xc, 3, 2, [1, 1, 1, 1], layout="NCHWc"), [xc], [xpk])
    np.testing.assert_allclose(got.transpose(0, 1, 4, 2, 3).reshape(want.shape), want, rtol=1e-6)
    g = compile_run(topi.global_avg_pool2d(xc, layout="NCHWc"), [xc], [xpk])
    np.testing.assert_allclose(g.reshape(1, 32), xa.mean(axis=(2, 3)), rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match="unknown layout"):
        topi.max_pool2d(x, 3, layout="NHWC")


def test_conv_group_shapes_schedule_for_must_handle(rng, compile_run):
    """Groups off the fast path still compile and agree: two outputs (conv and relu(conv)),
    a prime output width (no register-tile divisor), and an explicit pad before the conv."""
    x = te.placeholder((1, 1, 17, 17, 8), "float32", "x")
    w = te.placeholder((1, 1, 3, 3, 8, 8), "float32", "w")
    conv = topi.conv2d_nchwc(x, w, strides=1, pads=1)
    xa = rng.standard_normal(x.shape).astype("float32")
    wa = rng.standard_normal(w.shape).astype("float32")
    got_conv, got_relu = compile_run([conv, topi.relu(conv)], [x, w], [xa, wa])
    x4 = xa.transpose(0, 1, 4, 2, 3).reshape(1, 8, 17, 17)
    w4 = wa[0, 0].transpose(3, 2, 0, 1)                       # [oc, ic, kh, kw]
    ref = ort_run("Conv", [x4, np.ascontiguousarray(w4)], pads=[1] * 4)
    np.testing.assert_allclose(got_conv.transpose(0, 1, 4, 2, 3).reshape(ref.shape), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_relu, np.maximum(got_conv, 0), rtol=1e-6)
    padded = topi.pad(x, [0, 0, 1, 0, 0], [0, 0, 0, 1, 0], 0.0)
    y = topi.conv2d_nchwc(padded, w, strides=2, pads=0)
    got = compile_run(y, [x, w], [xa, wa])
    ref2 = ort_run("Conv", [x4, np.ascontiguousarray(w4)], pads=[1, 0, 0, 1], strides=[2, 2])
    np.testing.assert_allclose(got.transpose(0, 1, 4, 2, 3).reshape(ref2.shape), ref2, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("vnni", [True, False])
@pytest.mark.parametrize("c,h,w,oc,k,stride,pad", [(32, 9, 11, 32, 3, 1, 1), (16, 8, 7, 16, 1, 2, 0)])
def test_conv2d_nchwc_int8(vnni, c, h, w, oc, k, stride, pad, rng):
    """uint8 x int8 -> int32, exact; with VNNI the inner product is one vpdpbusd per pixel (AMX
    tiles, which an AMX host would use instead, are intrin/amx's tests')."""
    from vdla.compiler import build
    from vdla.compiler.target import Target
    host = Target.host(threads=2)
    if vnni and "+avx512vnni" not in host.features:
        pytest.skip("host has no AVX-512 VNNI")
    no_amx = ",".join(f.replace("+amx", "-amx") for f in host.features.split(","))
    target = Target(host.triple, host.cpu, no_amx if vnni else no_amx.replace("+avx512vnni", "-avx512vnni"), 2)
    x = te.placeholder((1, c // 16, h, w, 16), "uint8", "x")
    wt = te.placeholder((oc, c, k, k), "int8", "w")
    wp = te.placeholder((oc // 16, c // 16, k, k, 4, 16, 4), "int8", "wp")
    y = topi.conv2d_nchwc_int8(x, wp, strides=stride, pads=pad)
    kern = build(topi.schedule_for([y], target), [x, wp, y], target, "q")
    assert ("vpdpbusd" in kern.llvm_ir) == vnni
    xa = rng.integers(0, 256, x.shape).astype("uint8")
    wa = rng.integers(-128, 128, wt.shape).astype("int8")
    wpa = np.ascontiguousarray(wa.reshape(oc // 16, 16, c // 16, 4, 4, k, k).transpose(0, 2, 5, 6, 3, 1, 4))
    out = np.zeros(y.shape, "int32")
    kern.load().run("q", [xa, wpa, out])
    x4 = xa.transpose(0, 1, 4, 2, 3).reshape(1, c, h, w).astype("float32")
    ref = ort_run("Conv", [x4, wa.astype("float32")], strides=[stride] * 2, pads=[pad] * 4)
    n_, ob, oh, ow, b = out.shape
    np.testing.assert_array_equal(out.transpose(0, 1, 4, 2, 3).reshape(ref.shape), ref.astype(np.int64))


def test_pack_weight_nchwc_int8(rng, compile_run):
    wt = te.placeholder((32, 16, 3, 3), "int8", "w")
    wa = rng.integers(-128, 128, wt.shape).astype("int8")
    got = compile_run(topi.pack_weight_nchwc_int8(wt, 16), [wt], [wa])
    assert got.shape == (2, 1, 3, 3, 4, 16, 4)
    assert got[1, 0, 2, 1, 3, 5, 2] == wa[16 + 5, 3 * 4 + 2, 2, 1]


@pytest.mark.parametrize("conv, data, weight", [
    (topi.conv2d_nchw, ((1, 4, 2, 2), "float32"), ((8, 4, 3, 3), "float32")),
    (topi.conv2d_nchwc, ((1, 1, 2, 2, 4), "float32"), ((2, 1, 3, 3, 4, 4), "float32")),
    (topi.depthwise_conv2d_nchwc, ((1, 1, 2, 2, 4), "float32"), ((1, 1, 3, 3, 1, 4), "float32")),
    (topi.conv2d_nchwc_int8, ((1, 1, 2, 2, 4), "uint8"), ((1, 1, 3, 3, 1, 16, 4), "int8")),
])
def test_a_window_larger_than_the_padded_input_is_refused_in_every_layout(conv, data, weight):
    x, w = te.placeholder(*data, "x"), te.placeholder(*weight, "w")
    with pytest.raises(ValueError, match=rf"{conv.__name__}: a 3x3 window over .* gives a 0x0 output"):
        conv(x, w)


@pytest.mark.parametrize("features", ["host", "-avx512vnni"], ids=["vnni_where_the_host_has_it", "no_vnni"])
def test_int8_panel_matmul_equals_numpy(features, rng):
    """uint8 rows x int8 panels [N/16, K/4, 16, 4] -> int32 [rows, N/16, 16]: the packed weight's
    product in numpy (host_ops' semantics too), with the host's kernel (AMX tiles or vpdpbusd
    where it has them) and without VNNI."""
    from vdla.compiler import build
    from vdla.compiler.target import Target
    from vdla.driver.host_ops.layout import OPS as LAYOUT_OPS
    from vdla.driver.host_ops.layout import pack_matmul_weight_int8
    host = Target.host(threads=2)
    target = host if features == "host" else Target(host.triple, host.cpu, host.features.replace(
        "+avx512vnni", "-avx512vnni").replace("+avxvnni", "-avxvnni").replace("+amx", "-amx"), 2)
    a = te.placeholder((14, 24), "uint8", "a")
    w = te.placeholder((2, 6, 16, 4), "int8", "w")
    y = topi.matmul_int8_panels(a, w)
    aa = rng.integers(0, 256, (14, 24)).astype(np.uint8)
    wk = rng.integers(-128, 128, (24, 32)).astype(np.int8)
    wp = pack_matmul_weight_int8(wk)
    want = (aa.astype(np.int64) @ wk.astype(np.int64)).reshape(14, 2, 16)
    out = np.zeros((14, 2, 16), np.int32)
    build(topi.schedule_for([y], target), [a, w, y], target, "k").load().run("k", [aa, wp, out])
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(LAYOUT_OPS["QMatMulInt8"]([aa, wp], {})[0], want)


@pytest.mark.parametrize("features", ["host", "generic"], ids=["host", "no_avx2"])
def test_int8_products_of_offset_activations_equal_numpy(features, rng):
    """weight_sums given: the conv and the panel matmul multiply x - 128 (signed bytes, AVX2's
    vpsignb form where the target has AVX2; plain vectors elsewhere) and add 128 x the sums back:
    numpy's exact integers, whole-range activations and weights of [-127, 127]."""
    from vdla.compiler import build
    from vdla.compiler.target import Target
    from vdla.driver.host_ops.layout import pack_matmul_weight_int8
    host = Target.host(threads=2)
    target = host if features == "host" else Target(host.triple, "x86-64", "", 2)
    avx2 = "+avx2" in (target.features or "") and host.arch.startswith("x86")
    x = te.placeholder((1, 2, 9, 7, 16), "uint8", "x")
    wp = te.placeholder((2, 2, 3, 3, 4, 16, 4), "int8", "wp")
    sums = te.placeholder((2, 16), "int32", "sums")
    y = topi.conv2d_nchwc_int8(x, wp, strides=1, pads=1, weight_sums=sums)
    kern = build(topi.schedule_for([y], target), [x, wp, sums, y], target, "q")
    assert ("psign.b" in kern.llvm_ir) == avx2
    xa = rng.integers(0, 256, x.shape).astype("uint8")
    wa = rng.integers(-127, 128, (32, 32, 3, 3)).astype("int8")
    wpa = np.ascontiguousarray(wa.reshape(2, 16, 2, 4, 4, 3, 3).transpose(0, 2, 5, 6, 3, 1, 4))
    out = np.zeros(y.shape, "int32")
    kern.load().run("q", [xa, wpa, wa.astype(np.int64).reshape(32, -1).sum(1).astype(np.int32).reshape(2, 16), out])
    x4 = np.pad(xa.transpose(0, 1, 4, 2, 3).reshape(32, 9, 7).astype(np.int64), ((0, 0), (1, 1), (1, 1)))
    want = sum(np.einsum("ochw,chw->ohw", wa[:, :, i:i + 1, j:j + 1].astype(np.int64), x4[:, i:i + 9, j:j + 7])
               for i in range(3) for j in range(3))
    np.testing.assert_array_equal(out.transpose(0, 1, 4, 2, 3).reshape(32, 9, 7), want)

    a = te.placeholder((14, 24), "uint8", "a")
    w = te.placeholder((2, 6, 16, 4), "int8", "w")
    y = topi.matmul_int8_panels(a, w, weight_sums=sums)
    aa = rng.integers(0, 256, (14, 24)).astype(np.uint8)
    wk = rng.integers(-127, 128, (24, 32)).astype(np.int8)
    out = np.zeros((14, 2, 16), np.int32)
    kern = build(topi.schedule_for([y], target), [a, w, sums, y], target, "k")
    assert ("psign.b" in kern.llvm_ir) == avx2
    column_sums = wk.astype(np.int64).sum(0).astype(np.int32).reshape(2, 16)
    kern.load().run("k", [aa, pack_matmul_weight_int8(wk), column_sums, out])
    np.testing.assert_array_equal(out, (aa.astype(np.int64) @ wk.astype(np.int64)).reshape(14, 2, 16))


def test_weight_sums_of_the_wrong_shape_are_refused():
    x = te.placeholder((1, 1, 4, 4, 16), "uint8", "x")
    wp = te.placeholder((2, 1, 1, 1, 4, 16, 4), "int8", "wp")
    with pytest.raises(ValueError, match=r"conv2d_nchwc_int8: weight_sums must be int32 \[2, 16\], got int32\[32\]"):
        topi.conv2d_nchwc_int8(x, wp, weight_sums=te.placeholder((32,), "int32", "s"))


def test_only_the_image_accumulated_conv_prefetches_weights(host):
    """The image accumulator's first pass over an input-channel block reads all of that block's
    weights, its other passes none, so it prefetches the next block's, the tile's output blocks
    dealt over the passes (pass y: block y mod 2); a conv by row tiles re-reads its weights every
    row tile from cache and prefetches nothing."""
    from vdla.compiler import build
    from vdla.compiler.schedule import create_schedule
    from vdla.compiler.topi import conv_schedules, cpu_knobs

    def kernel(h, knobs):
        x = te.placeholder((1, 3, h, h, 16), "float32", "x")
        w = te.placeholder((8, 3, 3, 3, 16, 16), "float32", "w")
        y = topi.conv2d_nchwc(x, w, strides=1, pads=1)
        s = create_schedule(y)
        conv_schedules.try_schedule_anchor(s, [y], host, knobs)
        return build(s, [x, w, y], host, "k").loop_ir
    image = kernel(7, cpu_knobs.DirectConvKnobs(7, 2, image_accumulator=True))
    # one input block later (3 x 3 x 16 x 16 = 2304 weights); the other output block (3 x 2304 on)
    assert image.count("prefetch(w[") == 1 and "+ 2304)]" in image and "((y.c % 2) * 6912)" in image
    assert "prefetch" not in kernel(7, cpu_knobs.DirectConvKnobs(7, 2, image_accumulator=False))
