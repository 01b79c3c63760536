"""Data movement, reductions and quantization against numpy."""
import numpy as np
import pytest

from vdla.compiler import te, topi


def test_reshape_transpose_flatten(rng, compile_run):
    x = te.placeholder((2, 3, 5, 7), "float32", "x")
    xa = rng.standard_normal(x.shape).astype("float32")
    np.testing.assert_array_equal(compile_run(topi.reshape(x, [6, -1]), [x], [xa]), xa.reshape(6, -1))
    np.testing.assert_array_equal(compile_run(topi.transpose(x, [0, 2, 3, 1]), [x], [xa]), xa.transpose(0, 2, 3, 1))
    np.testing.assert_array_equal(compile_run(topi.flatten(x, 2), [x], [xa]), xa.reshape(6, 35))
    np.testing.assert_array_equal(compile_run(topi.expand_dims(topi.squeeze(topi.reshape(x, [1, 210])), 0), [x], [xa]),
                                  xa.reshape(1, 210))


def test_concat_split_slice(rng, compile_run):
    a, b, c = (te.placeholder((2, n, 3), "int32", f"t{n}") for n in (1, 4, 2))
    arrs = [rng.integers(-9, 9, t.shape).astype("int32") for t in (a, b, c)]
    np.testing.assert_array_equal(compile_run(topi.concat([a, b, c], axis=1), [a, b, c], arrs),
                                  np.concatenate(arrs, axis=1))
    x = te.placeholder((11, 6), "float32", "x")
    xa = rng.standard_normal(x.shape).astype("float32")
    parts = compile_run(topi.split(x, [3, 5, 3], axis=0), [x], [xa])
    for got, want in zip(parts, np.split(xa, [3, 8], axis=0)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(compile_run(topi.strided_slice(x, [1, -1], [10, 0], axes=[0, 1], steps=[3, -2]),
                                              [x], [xa]), xa[1:10:3, -1:0:-2])


def test_pad(rng, compile_run):
    x = te.placeholder((3, 4), "float32", "x")
    xa = rng.standard_normal(x.shape).astype("float32")
    np.testing.assert_array_equal(compile_run(topi.pad(x, [1, 0], [2, 3], value=-1.5), [x], [xa]),
                                  np.pad(xa, [(1, 2), (0, 3)], constant_values=-1.5))


@pytest.mark.parametrize("axes,keep", [([1], False), ([0, 2], True), (None, False)])
def test_reductions(axes, keep, rng, compile_run):
    x = te.placeholder((4, 5, 6), "float32", "x")
    xa = rng.standard_normal(x.shape).astype("float32")
    ax = tuple(axes) if axes is not None else None
    for op, ref in ((topi.reduce_sum, np.sum), (topi.reduce_mean, np.mean), (topi.reduce_max, np.max),
                    (topi.reduce_min, np.min)):
        want = np.asarray(ref(xa, axis=ax, keepdims=keep)).reshape(op(x, axes, keep).shape)
        np.testing.assert_allclose(compile_run(op(x, axes, keep), [x], [xa]), want, rtol=1e-5, atol=1e-5)


def test_quantize_dequantize_requantize(rng, compile_run):
    x = te.placeholder((3, 50), "float32", "x")
    xa = rng.uniform(-3, 3, x.shape).astype("float32")
    xa[0, :4] = [0.025, 0.075, -0.025, 10.0]     # ties (scale 0.05 -> .5) and saturation
    q = compile_run(topi.quantize(x, 0.05, 3, "int8"), [x], [xa])
    want = np.clip(np.round(xa / np.float32(0.05)) + 3, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(q, want)
    qt = te.placeholder(x.shape, "int8", "q")
    np.testing.assert_allclose(compile_run(topi.dequantize(qt, 0.05, 3), [qt], [q]),
                               (q.astype(np.float32) - 3) * np.float32(0.05), rtol=1e-6)
    acc = te.placeholder((4, 30), "int32", "acc")
    aa = rng.integers(-20000, 20000, acc.shape).astype("int32")
    got = compile_run(topi.requantize(acc, 0.001, 0.2, -5, "int8"), [acc], [aa])
    want = np.clip(np.round(aa.astype(np.float32) * np.float32(0.001 / 0.2)) - 5, -128, 127).astype(np.int8)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("starts, ends, steps", [
    ([-100], [-200], [-1]),       # start before the first element, stepping back: element 0 only
    ([100], [-100], [-2]),        # from past the end back to before the start
    ([-3], [100], [2]),
    ([2], [2**62], [1]),
])
def test_slice_clamps_as_onnx_does(starts, ends, steps, rng, compile_run):
    import onnxruntime
    from onnx import TensorProto, helper, numpy_helper
    x = te.placeholder((7,), "float32", "x")
    xa = rng.standard_normal(x.shape).astype("float32")
    consts = [numpy_helper.from_array(np.array(v, np.int64), n)
              for n, v in (("s", starts), ("e", ends), ("a", [0]), ("p", steps))]
    graph = helper.make_graph([helper.make_node("Slice", ["x", "s", "e", "a", "p"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], consts)
    model = helper.make_model(graph, ir_version=9, opset_imports=[helper.make_opsetid("", 17)])
    want = onnxruntime.InferenceSession(model.SerializeToString()).run(None, {"x": xa})[0]
    np.testing.assert_array_equal(compile_run(topi.strided_slice(x, starts, ends, [0], steps), [x], [xa]), want)


@pytest.mark.parametrize("tokens", [197, 17, 9])
def test_rows_of_no_vector_factor_run_in_whole_vectors_and_a_guarded_tail(tokens, rng, host, compile_run):
    """A row of 197 (a ViT's tokens; no factor of 4, 8 or 16) is stored in whole vectors, the
    last partial one partitioned off; 9 is too short to split. The values are numpy's."""
    from vdla.compiler.build import lower
    from vdla.compiler.tir import expr as E
    from vdla.compiler.tir.functor import visit
    x = te.placeholder((3, tokens, 8), "float32", "x")
    y = topi.transpose(x, [0, 2, 1])
    func = lower(topi.schedule_for([y], host), [x, y], "k")
    stores = []
    visit(func.body, lambda n: stores.append(n) if type(n).__name__ == "BufferStore" else None)
    assert any(isinstance(s.indices[0], E.Ramp) for s in stores) == (tokens >= 2 * host.vector_lanes(32))
    xa = rng.standard_normal(x.shape).astype("float32")
    np.testing.assert_array_equal(compile_run(y, [x], [xa]), xa.transpose(0, 2, 1))
