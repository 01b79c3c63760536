"""Every GPU kernel the tests compile: hand-written GPU schedules of the schedule primitives and
the operator library's default GPU schedules, each with numpy inputs and expected outputs.

tests/compiler/codegen/nvptx/test_gpu_emulation.py runs each on the CPU emulation against
numpy; test_ptxas.py assembles the PTX of each for sm_80 and sm_90.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vdla.compiler import te, topi
from vdla.compiler.schedule import create_schedule
from vdla.compiler.topi.gpu import conv2d_nchw_winograd, schedule_for_gpu
from vdla.compiler.topi.gpu import dense as gpu_dense
from vdla.driver.host_ops.winograd import transform_weight


@dataclass
class Case:
    schedule: object
    args: list           # tensors: inputs, then outputs
    inputs: list         # numpy arrays
    expected: list       # numpy arrays, one per output
    rtol: float = 1e-5


def _rng(name):
    return np.random.default_rng(sum(map(ord, name)))


def _f32(rng, *shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype("float32")


# -- hand-written schedules ------------------------------------------------------------------

def matmul_shared(m=70, n=50, k=36, tile=16, kt=8):
    """C = A @ B^T in 16 x 16 blocks of 16 x 16 threads, K in steps of 8 staged in shared memory
    (tails in M, N and K: guarded fetches and stores)."""
    a = te.placeholder((m, k), "float32", "A")
    b = te.placeholder((n, k), "float32", "B")
    r = te.reduce_axis((0, k), "k")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r.var] * b[j, r.var], axis=r), "C")
    s = create_schedule(c)
    aa, bb = s.cache_read(a, "shared", [c]), s.cache_read(b, "shared", [c])
    i, j = s[c].op.axis
    bi, ti = s[c].split(i, tile)
    bj, tj = s[c].split(j, tile)
    s[c].reorder(bi, bj, ti, tj)
    ko, _ = s[c].split(s[c].op.reduce_axis[0], kt)
    for ax, tag in ((bi, "blockIdx.y"), (bj, "blockIdx.x"), (ti, "threadIdx.y"), (tj, "threadIdx.x")):
        s[c].bind(ax, tag)
    s[aa].compute_at(s[c], ko)
    s[bb].compute_at(s[c], ko)
    rng = _rng("matmul_shared")
    A, B = _f32(rng, m, k), _f32(rng, n, k)
    return Case(s, [a, b, c], [A, B], [A @ B.T], 1e-4)


def matmul_local_accumulator():
    """matmul_shared with the accumulator in a register (cache_write "local") and 2 x 2 outputs
    per thread: the local buffer lives across the block's barriers."""
    m, n, k = 64, 64, 40
    a = te.placeholder((m, k), "float32", "A")
    b = te.placeholder((n, k), "float32", "B")
    r = te.reduce_axis((0, k), "k")
    c = te.compute((m, n), lambda i, j: te.sum(a[i, r.var] * b[j, r.var], axis=r), "C")
    s = create_schedule(c)
    cl = s.cache_write(c, "local")
    aa, bb = s.cache_read(a, "shared", [cl]), s.cache_read(b, "shared", [cl])
    i, j = s[c].op.axis
    bi, ii = s[c].split(i, 16)
    ty, yi = s[c].split(ii, 2)
    bj, jj = s[c].split(j, 16)
    tx, xi = s[c].split(jj, 2)
    s[c].reorder(bi, bj, ty, tx, yi, xi)
    for ax, tag in ((bi, "blockIdx.y"), (bj, "blockIdx.x"), (ty, "threadIdx.y"), (tx, "threadIdx.x")):
        s[c].bind(ax, tag)
    s[cl].compute_at(s[c], tx)
    ko, ki = s[cl].split(s[cl].op.reduce_axis[0], 8)
    ci, cj = s[cl].op.axis
    s[cl].reorder(ko, ki, ci, cj)
    s[aa].compute_at(s[cl], ko)
    s[bb].compute_at(s[cl], ko)
    rng = _rng("matmul_local")
    A, B = _f32(rng, m, k), _f32(rng, n, k)
    return Case(s, [a, b, c], [A, B], [A @ B.T], 1e-4)


def stencil_block_shared():
    """A 1-D 3-point stencil whose input tile (block + halo) is fetched into shared memory at
    the block loop, outside the thread loop; int32, so exact."""
    n = 1000
    x = te.placeholder((n + 2,), "int32", "x")
    y = te.compute((n,), lambda i: x[i] + 2 * x[i + 1] + x[i + 2], "y")
    s = create_schedule(y)
    xs = s.cache_read(x, "shared", [y])
    bx, tx = s[y].split(s[y].op.axis[0], 128)
    s[y].bind(bx, "blockIdx.x")
    s[y].bind(tx, "threadIdx.x")
    s[xs].compute_at(s[y], bx)
    X = _rng("stencil").integers(-100, 100, n + 2).astype("int32")
    return Case(s, [x, y], [X], [X[:-2] + 2 * X[1:-1] + X[2:]], 0)


def transpose_3d_block():
    """A transpose through a shared tile with a 3-D thread block (z, y, x): the linear thread
    index of the cooperative fetch is CUDA's."""
    d, h, w = 4, 24, 40
    x = te.placeholder((d, h, w), "float32", "x")
    y = te.compute((d, w, h), lambda a, i, j: x[a, j, i] * 2.0, "y")
    s = create_schedule(y)
    xs = s.cache_read(x, "shared", [y])
    a, i, j = s[y].op.axis
    bi, ti = s[y].split(i, 8)
    bj, tj = s[y].split(j, 8)
    s[y].reorder(bi, bj, a, ti, tj)
    for ax, tag in ((bi, "blockIdx.y"), (bj, "blockIdx.x"), (a, "threadIdx.z"), (ti, "threadIdx.y"),
                    (tj, "threadIdx.x")):
        s[y].bind(ax, tag)
    s[xs].compute_at(s[y], bj)
    X = _f32(_rng("transpose"), d, h, w)
    return Case(s, [x, y], [X], [np.transpose(X, (0, 2, 1)) * 2], 0)


def row_max_across_threads():
    """int32 row maxima, each row's reduction across 48 threads (not a power of two: the tree's
    first level leaves the threads without a partner alone), three rows per block one after
    another (the shared partials are reused: a barrier before each row's writes)."""
    rows, n = 12, 200
    x = te.placeholder((rows, n), "int32", "x")
    r = te.reduce_axis((0, n), "k")
    y = te.compute((rows,), lambda i: te.max(x[i, r.var], axis=r), "rowmax")
    s = create_schedule(y)
    bo, _ = s[y].split(s[y].op.axis[0], 3)
    _, kt = s[y].split(s[y].op.reduce_axis[0], 48)
    s[y].bind(bo, "blockIdx.x")
    s[y].bind(kt, "threadIdx.x")
    X = _rng("rowmax").integers(-10 ** 6, 10 ** 6, (rows, n)).astype("int32")
    return Case(s, [x, y], [X], [X.max(1)], 0)


def min_epilogue_across_threads():
    """min over two fused reduction axes (180 values) across 64 threads, six outputs per block
    along threadIdx.y, the reduction in a register and its epilogue (2 m + 1) stored by the
    first thread of each output."""
    a, b, c = 6, 20, 9
    x = te.placeholder((a, b, c), "float32", "x")
    rj, rk = te.reduce_axis((0, b), "j"), te.reduce_axis((0, c), "k")
    m = te.compute((a,), lambda i: te.min(x[i, rj.var, rk.var], axis=[rj, rk]), "m")
    y = te.compute((a,), lambda i: m[i] * 2.0 + 1.0, "y")
    s = create_schedule(y)
    s[y].bind(s[y].op.axis[0], "threadIdx.y")
    s[y].store_by_first_thread("threadIdx.x")
    s[m].set_scope("local")
    s[m].compute_at(s[y], s[y].op.axis[0])
    _, kt = s[m].split(s[m].fuse(*s[m].op.reduce_axis), 64)
    s[m].bind(kt, "threadIdx.x")
    X = _f32(_rng("min_epilogue"), a, b, c)
    return Case(s, [x, y], [X], [X.min(axis=(1, 2)) * 2 + 1], 0)


# -- the operator library's default GPU schedules --------------------------------------------

def _default(name, outs, args, inputs, expected, rtol=1e-5):
    return Case(schedule_for_gpu(outs), args, inputs, expected, rtol)


def elementwise_fused():
    """add (broadcast) -> sigmoid -> x3 - 1 -> tanh, one kernel."""
    rng = _rng("eltwise")
    a, b = te.placeholder((3, 1000), "float32", "a"), te.placeholder((1000,), "float32", "b")
    out = topi.tanh(topi.subtract(topi.multiply(topi.sigmoid(topi.add(a, b)), 3.0), 1.0))
    A, B = _f32(rng, 3, 1000, scale=4), _f32(rng, 1000)
    return _default("eltwise", [out], [a, b, out], [A, B], [np.tanh(3 / (1 + np.exp(-(A + B))) - 1)])


def elementwise_math():
    """exp, log, erf and pow in one fused kernel (the GPU's own formulas in the PTX)."""
    rng = _rng("math")
    a = te.placeholder((4, 300), "float32", "a")
    pos = topi.add(topi.abs(a), 0.5)
    out = topi.add(topi.add(topi.exp(topi.multiply(a, 0.5)), topi.log(pos)),
                   topi.add(topi.erf(a), topi.power(pos, topi.floor(a))))
    A = _f32(rng, 4, 300, scale=2)
    P = np.abs(A) + 0.5
    erf = np.vectorize(math.erf)(A.astype("float64"))
    want = (np.exp(A / 2) + np.log(P) + erf + P ** np.floor(A)).astype(np.float32)   # erf made it float64
    return _default("math", [out], [a, out], [A], [want], 1e-4)


def dense_tiled():
    """topi.gpu.dense + bias + relu: shared-memory tiles, 4 x 4 outputs per thread, M, N tails."""
    rng = _rng("dense_tiled")
    x, w, b = (te.placeholder(s, "float32", n) for s, n in (((130, 96), "x"), ((70, 96), "w"), ((70,), "b")))
    out = topi.relu(gpu_dense(x, w, b))
    X, W, B = _f32(rng, 130, 96), _f32(rng, 70, 96), _f32(rng, 70)
    return _default("dense_tiled", [out], [x, w, b, out], [X, W, B], [np.maximum(X @ W.T + B, 0)], 1e-4)


def dense_row_factored():
    """topi.dense's CPU form (K = 96 factored by 16): 16 partial sums per thread in registers."""
    rng = _rng("dense_rf")
    x, w = te.placeholder((9, 96), "float32", "x"), te.placeholder((40, 96), "float32", "w")
    out = topi.dense(x, w)
    X, W = _f32(rng, 9, 96), _f32(rng, 40, 96)
    return _default("dense_rf", [out], [x, w, out], [X, W], [X @ W.T], 1e-4)


def dense_int8():
    """int8 x int8 -> int32 dense (exact), small enough for one output per thread."""
    rng = _rng("dense_int8")
    x, w = te.placeholder((5, 33), "int8", "x"), te.placeholder((7, 33), "int8", "w")
    out = gpu_dense(x, w)
    X, W = rng.integers(-128, 128, (5, 33)).astype("int8"), rng.integers(-128, 128, (7, 33)).astype("int8")
    return _default("dense_int8", [out], [x, w, out], [X, W], [X.astype("int32") @ W.T.astype("int32")], 0)


def conv_reference(data, weight, stride, pad, groups=1):
    n, c, h, w = data.shape
    oc, cg, kh, kw = weight.shape
    padded = np.pad(data.astype("float64"), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (w + 2 * pad - kw) // stride + 1
    out = np.zeros((n, oc, oh, ow))
    opg = oc // groups
    for o in range(oc):
        g = o // opg
        for y in range(kh):
            for x in range(kw):
                patch = padded[:, g * cg:(g + 1) * cg, y:y + stride * oh:stride, x:x + stride * ow:stride]
                out[:, o] += np.einsum("nchw,c->nhw", patch, weight[o, :, y, x])
    return out.astype("float32")


def conv2d_direct():
    """conv2d 3x3 pad 1 + relu, NCHW: weights staged in shared memory, fused epilogue."""
    rng = _rng("conv")
    data, wt = te.placeholder((2, 12, 11, 13), "float32", "data"), te.placeholder((10, 12, 3, 3), "float32", "wt")
    out = topi.relu(topi.conv2d_nchw(data, wt, strides=1, pads=1))
    D, W = _f32(rng, 2, 12, 11, 13), _f32(rng, 10, 12, 3, 3)
    return _default("conv", [out], [data, wt, out], [D, W], [np.maximum(conv_reference(D, W, 1, 1), 0)], 1e-4)


def conv2d_depthwise():
    """depthwise conv2d 3x3 stride 2 pad 1 (groups = channels)."""
    rng = _rng("depthwise")
    data, wt = te.placeholder((1, 6, 15, 14), "float32", "data"), te.placeholder((6, 1, 3, 3), "float32", "wt")
    out = topi.conv2d_nchw(data, wt, strides=2, pads=1, groups=6)
    D, W = _f32(rng, 1, 6, 15, 14), _f32(rng, 6, 1, 3, 3)
    return _default("depthwise", [out], [data, wt, out], [D, W], [conv_reference(D, W, 2, 1, groups=6)], 1e-4)


def conv2d_winograd():
    """Winograd F(2x2, 3x3) + bias + relu, NCHW, batch 2, odd output sizes (partial tiles),
    fewer tiles in a row than a GEMM block takes (a block: whole rows)."""
    rng = _rng("winograd")
    D, W, B = _f32(rng, 2, 12, 11, 13), _f32(rng, 10, 12, 3, 3), _f32(rng, 10)
    U = transform_weight(W, 1, 1)
    data, u, b = (te.placeholder(a.shape, "float32", n) for a, n in ((D, "data"), (U, "u"), (B, "b")))
    out = topi.relu(conv2d_nchw_winograd(data, u, b, pads=1))
    want = np.maximum(conv_reference(D, W, 1, 1) + B[None, :, None, None], 0)
    return _default("winograd", [out], [data, u, b, out], [D, U, B], [want], 1e-4)


def conv2d_winograd_wide():
    """Winograd with a residual add and no padding: 18 tiles in a row, more than a GEMM block
    takes (a block: part of a row), 64 output channels (4 per thread)."""
    rng = _rng("winograd_wide")
    D, W, R = _f32(rng, 1, 9, 20, 38), _f32(rng, 64, 9, 3, 3), _f32(rng, 1, 64, 18, 36)
    U = transform_weight(W, 1, 1)
    data, u, res = (te.placeholder(a.shape, "float32", n) for a, n in ((D, "data"), (U, "u"), (R, "res")))
    out = topi.add(conv2d_nchw_winograd(data, u, pads=0), res)
    return _default("winograd_wide", [out], [data, u, res, out], [D, U, R], [conv_reference(D, W, 1, 0) + R], 1e-4)


def _pool_windows(D, k, stride, pad, fill):
    padded = np.pad(D, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=fill)
    oh = (D.shape[2] + 2 * pad - k) // stride + 1
    ow = (D.shape[3] + 2 * pad - k) // stride + 1
    return np.stack([padded[:, :, y:y + stride * oh:stride, x:x + stride * ow:stride]
                     for y in range(k) for x in range(k)])


def max_pool():
    rng = _rng("maxpool")
    data = te.placeholder((2, 5, 11, 13), "float32", "data")
    out = topi.max_pool2d(data, 3, 2, 1)
    D = _f32(rng, 2, 5, 11, 13)
    return _default("maxpool", [out], [data, out], [D], [_pool_windows(D, 3, 2, 1, -np.inf).max(0)])


def avg_pool():
    rng = _rng("avgpool")
    data = te.placeholder((1, 4, 12, 12), "float32", "data")
    out = topi.avg_pool2d(data, 2, 2)
    D = _f32(rng, 1, 4, 12, 12)
    return _default("avgpool", [out], [data, out], [D], [_pool_windows(D, 2, 2, 0, 0).mean(0)])


def global_avg_pool():
    rng = _rng("gap")
    data = te.placeholder((2, 6, 7, 7), "float32", "data")
    out = topi.global_avg_pool2d(data)
    D = _f32(rng, 2, 6, 7, 7)
    return _default("gap", [out], [data, out], [D], [D.mean(axis=(2, 3), keepdims=True)])


def softmax_rows():
    rng = _rng("softmax")
    x = te.placeholder((7, 300), "float32", "x")
    out = topi.softmax(x)
    X = _f32(rng, 7, 300, scale=5)
    e = np.exp(X - X.max(1, keepdims=True))
    return _default("softmax", [out], [x, out], [X], [e / e.sum(1, keepdims=True)])


def softmax_one_row():
    """A batch of one: the max and the sum are one element each, kernels of one thread."""
    x = te.placeholder((1, 10), "float32", "x")
    out = topi.softmax(x)
    X = _f32(_rng("softmax1"), 1, 10)
    e = np.exp(X - X.max())
    return _default("softmax1", [out], [x, out], [X], [e / e.sum()])


def softmax_1000_classes():
    """Batch 1, 1000 classes: the max and the sum across 256 threads of one block."""
    x = te.placeholder((1, 1000), "float32", "x")
    out = topi.softmax(x)
    X = _f32(_rng("softmax1000"), 1, 1000, scale=3)
    e = np.exp(X - X.max())
    return _default("softmax1000", [out], [x, out], [X], [e / e.sum()])


def global_avg_pool_512():
    """ResNet-18's global pool at batch 1: 512 channels of 7 x 7, 32 threads per channel."""
    data = te.placeholder((1, 512, 7, 7), "float32", "data")
    out = topi.global_avg_pool2d(data)
    D = _f32(_rng("gap512"), 1, 512, 7, 7)
    return _default("gap512", [out], [data, out], [D], [D.mean(axis=(2, 3), keepdims=True)])


def fc_batch1():
    """ResNet-18's FC at batch 1 (K = 512, 1000 outputs, + bias) in topi.dense's row-factored
    form: an output's 16 partial sums are 16 threads', summed across them."""
    rng = _rng("fc1")
    x, w, b = (te.placeholder(s, "float32", n) for s, n in (((1, 512), "x"), ((1000, 512), "w"), ((1000,), "b")))
    out = topi.dense(x, w, b)
    X, W, B = _f32(rng, 1, 512), _f32(rng, 1000, 512, scale=0.05), _f32(rng, 1000)
    return _default("fc1", [out], [x, w, b, out], [X, W, B], [X @ W.T + B], 1e-4)


def dense_batch1_relu():
    """topi.gpu.dense at batch 1 (K = 300 across 256 threads, 37 outputs) + relu."""
    rng = _rng("dense1")
    x, w = te.placeholder((1, 300), "float32", "x"), te.placeholder((37, 300), "float32", "w")
    out = topi.relu(gpu_dense(x, w))
    X, W = _f32(rng, 1, 300), _f32(rng, 37, 300)
    return _default("dense1", [out], [x, w, out], [X, W], [np.maximum(X @ W.T, 0)], 1e-4)


CASES = {f.__name__: f for f in (
    row_max_across_threads, min_epilogue_across_threads, softmax_1000_classes, global_avg_pool_512, fc_batch1,
    dense_batch1_relu,
    matmul_shared, matmul_local_accumulator, stencil_block_shared, transpose_3d_block,
    elementwise_fused, elementwise_math, dense_tiled, dense_row_factored, dense_int8,
    conv2d_direct, conv2d_depthwise, conv2d_winograd, conv2d_winograd_wide, max_pool, avg_pool, global_avg_pool, softmax_rows, softmax_one_row)}
