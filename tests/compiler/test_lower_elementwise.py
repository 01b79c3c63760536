"""The elementwise math ops' kernel rules (lower_ops.RULES on topi.elemwise): one ONNX node or a
fused chain compiles to kernels only, no host step, and equals onnxruntime."""
import numpy as np
import onnx
import pytest
from onnx import helper

from ort_oracle import IR_VERSION, check_node, node_model, ort_run
from vdla.compiler.compile_model import compile_model
from vdla.driver.executor import Executor


def _compiled(model, feeds):
    artifact = compile_model(model, input_shapes={k: list(v.shape) for k, v in feeds.items()}, kernels=True)
    return artifact, artifact.header["compile"]["host_reasons"]


def check_kernel(op, inputs, attrs=None, constants=(), **tol):
    """onnxruntime's answer from kernels alone: every step of the compiled model is a kernel."""
    check_node(op, inputs, attrs, constants=constants, kernels=(True,), **tol)
    feeds = {k: np.asarray(v) for k, v in inputs.items() if k not in constants}
    artifact, reasons = _compiled(node_model(op, inputs, attrs, constants=constants), feeds)
    assert not reasons, reasons
    assert {s.kind for s in artifact.plan.steps} <= {"kernel", "alias"}


def signed(rng, shape):
    x = rng.standard_normal(shape).astype(np.float32) * 3
    x.flat[:4] = [0, -0.0, 0.5, -2.5]
    return x


@pytest.mark.parametrize("op", ["Erf", "Neg", "Abs", "Softplus"])
def test_float_unary(op, rng):
    check_kernel(op, {"x": signed(rng, (3, 40))})


@pytest.mark.parametrize("op", ["Sqrt", "Reciprocal"])
def test_positive_unary(op, rng):
    check_kernel(op, {"x": rng.uniform(0.01, 50, (5, 24)).astype(np.float32)})


@pytest.mark.parametrize("op", ["Neg", "Abs"])
def test_integer_unary(op, rng):
    check_kernel(op, {"x": rng.integers(-100, 100, (4, 32)).astype(np.int32)})


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate, rng):
    check_kernel("Gelu", {"x": signed(rng, (2, 64))}, {"approximate": approximate})


@pytest.mark.parametrize("alpha", [1.0, 0.3])
def test_elu(alpha, rng):
    check_kernel("Elu", {"x": signed(rng, (2, 48))}, {"alpha": alpha})


@pytest.mark.parametrize("slope_shape", [(3, 1, 1), (1,), (5,)])
def test_prelu(slope_shape, rng):
    check_kernel("PRelu", {"x": signed(rng, (2, 3, 4, 5)), "slope": rng.uniform(0, 1, slope_shape).astype(np.float32)})


@pytest.mark.parametrize("exponent", [2.0, 3.0, 0.5, -1.0, 1.5])
def test_pow_by_a_constant(exponent, rng):
    check_kernel("Pow", {"x": rng.uniform(0.05, 6, (3, 32)).astype(np.float32), "e": np.float32(exponent)},
                 constants={"e"})


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32"])
def test_pow_by_a_tensor(dtype, rng):
    base = signed(rng, (3, 16))
    check_kernel("Pow", {"x": base, "e": np.array([0, 1, 2, 3, -1, 2, 1, 0] * 2, dtype)})


@pytest.mark.parametrize("op", ["Min", "Max"])
def test_min_max(op, rng):
    a, b, c = signed(rng, (2, 3, 32)), signed(rng, (3, 1)), signed(rng, (32,))
    a[0, 0, 5], b[1, 0] = np.nan, np.nan
    check_kernel(op, {"a": a, "b": b})
    check_kernel(op, {"a": a, "b": b, "c": c})
    check_kernel(op, {"a": a})


@pytest.mark.parametrize("op", ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"])
@pytest.mark.parametrize("shape", [(4, 6, 1), (4, 6, 37)], ids=["last_dim_1", "vectors"])
def test_comparisons(op, shape, rng):
    """Bool results stored one element at a time and as vectors (a bool is a byte in memory)."""
    check_kernel(op, {"a": np.round(signed(rng, shape)), "b": np.round(signed(rng, shape[1:]))})


def test_bools_in_and_out_of_kernels_as_vectors(rng):
    """Cast to bool (a kernel's bool output) and Where reading a bool input, 40 wide: the
    vector loads and stores of bools move bytes, not bits."""
    x = np.round(signed(rng, (4, 40)))
    check_kernel("Cast", {"x": x}, {"to": onnx.TensorProto.BOOL})
    check_kernel("Where", {"c": rng.integers(0, 2, (4, 40)).astype(bool), "a": signed(rng, (4, 40)),
                           "b": signed(rng, (40,))})


def test_where_with_a_broadcast_condition(rng):
    check_kernel("Where", {"c": rng.integers(0, 2, (3, 5, 1)).astype(bool), "a": signed(rng, (5, 16)),
                           "b": signed(rng, (16,))})


def test_swish_against_the_onnx_reference(rng):
    """onnxruntime has no Swish (opset 24): onnx's reference evaluator is the oracle."""
    from onnx.reference import ReferenceEvaluator
    x = signed(rng, (3, 32))
    model = node_model("Swish", {"x": x}, {"alpha": 0.75})
    want = ReferenceEvaluator(model).run(None, {"x": x})[0]
    artifact, reasons = _compiled(model, {"x": x})
    assert not reasons, reasons
    np.testing.assert_allclose(Executor(artifact).run({"x": x})["y0"], want, rtol=1e-6, atol=1e-7)


def _chain_model(shape):
    """gelu(x) written out as exporters do, a mask from a comparison, and Min/Max: one chain."""
    f = onnx.TensorProto.FLOAT
    nodes = [
        helper.make_node("Div", ["x", "sqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["e1"]), helper.make_node("Mul", ["x", "e1"], ["m"]),
        helper.make_node("Mul", ["m", "half"], ["g"]), helper.make_node("Pow", ["g", "two"], ["p"]),
        helper.make_node("Sqrt", ["p"], ["s"]), helper.make_node("Less", ["s", "one"], ["mask"]),
        helper.make_node("Where", ["mask", "s", "x"], ["w"]), helper.make_node("Max", ["w", "lo"], ["y"]),
    ]
    scalars = {"sqrt2": np.sqrt(2), "one": 1.0, "half": 0.5, "two": 2.0, "lo": -1.0}
    inits = [helper.make_tensor(k, f, [], [v]) for k, v in scalars.items()]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", f, shape)],
                              [helper.make_tensor_value_info("y", f, shape)], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=IR_VERSION)


def test_chains_of_math_ops_fuse_into_kernels(rng):
    x = signed(rng, (4, 64))
    model = _chain_model(list(x.shape))
    artifact, reasons = _compiled(model, {"x": x})
    assert not reasons, reasons
    # s feeds both Less and Where, so the chain is two kernels; the bool mask stays inside the second
    # (the written-out GELU is one Gelu: passes/gelu.py)
    assert [(s.kind, s.op) for s in artifact.plan.steps] == [
        ("kernel", "Gelu+Pow+Sqrt"), ("kernel", "Less+Where+Max")]
    got = Executor(artifact).run({"x": x})["y"]
    np.testing.assert_allclose(got, ort_run(model, {"x": x})[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op, attrs", [("Floor", {}), ("Ceil", {}), ("Round", {}), ("Softsign", {}), ("Mish", {}),
                                       ("Selu", {}), ("Selu", {"alpha": 2.0, "gamma": 0.5}), ("Celu", {}),
                                       ("Celu", {"alpha": 0.4}), ("ThresholdedRelu", {"alpha": 0.3}), ("Sign", {})])
def test_more_float_unary(op, attrs, rng):
    x = signed(rng, (3, 40))
    x.flat[4:8] = [1.5, -1.5, 2.5, 0.49999997]       # Round's ties go to even
    check_kernel(op, {"x": x}, attrs, rtol=2e-6, atol=1e-6)


def test_log_and_integer_sign(rng):
    check_kernel("Log", {"x": rng.uniform(0.001, 100, (4, 33)).astype(np.float32)})
    check_kernel("Sign", {"x": rng.integers(-3, 4, (4, 33)).astype(np.int32)})


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logical(op, rng):
    check_kernel(op, {"a": rng.random((3, 1, 20)) > 0.5, "b": rng.random((4, 20)) > 0.3})
    check_kernel("Not", {"x": rng.random((5, 17)) > 0.5})


@pytest.mark.parametrize("op", ["Sum", "Mean"])
def test_variadic_sum_and_mean(op, rng):
    check_kernel(op, {"a": signed(rng, (2, 3, 8)), "b": signed(rng, (3, 1)), "c": signed(rng, (8,))})
    check_kernel(op, {"a": signed(rng, (2, 5))})


def test_expand_and_tile(rng):
    x = signed(rng, (3, 1, 5))
    check_kernel("Expand", {"x": x, "shape": np.array([2, 3, 4, 5], np.int64)}, constants={"shape"})
    check_kernel("Expand", {"x": x, "shape": np.array([1, 1], np.int64)}, constants={"shape"})
    check_kernel("Tile", {"x": x, "repeats": np.array([2, 3, 1], np.int64)}, constants={"repeats"})


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_and_back(mode, rng):
    check_kernel("DepthToSpace", {"x": signed(rng, (2, 12, 3, 5))}, {"blocksize": 2, "mode": mode})
    check_kernel("SpaceToDepth", {"x": signed(rng, (2, 3, 6, 9))}, {"blocksize": 3})
    # CRD for SpaceToDepth came with opset 25, which onnxruntime lacks: the ONNX node test
    # test_spacetodepth_crd_mode_example checks it against the reference outputs


@pytest.mark.parametrize("shape, axis", [((6, 1000), -1), ((3, 5), -1), ((2, 40, 7), 1), ((37,), 0)])
def test_log_softmax(shape, axis, rng):
    """Rows of 1000 (a classifier's), short rows (scalar reductions), a middle axis, 1-D; values
    far below the row's max stay finite (the log of the sum, not of an underflowed quotient)."""
    x = signed(rng, shape) * 10
    x.flat[1] = -300.0
    check_kernel("LogSoftmax", {"x": x}, {"axis": axis}, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("op", ["ReduceL2", "ReduceSumSquare", "ReduceL1", "ReduceLogSum"])
@pytest.mark.parametrize("axes, keepdims", [([-1], 1), ([1, 2], 0), (None, 1)])
def test_norm_reductions(op, axes, keepdims, rng):
    x = signed(rng, (2, 6, 33)) if op != "ReduceLogSum" else rng.uniform(0.1, 2, (2, 6, 33)).astype(np.float32)
    inputs = {"x": x} if axes is None else {"x": x, "axes": np.array(axes, np.int64)}
    check_kernel(op, inputs, {"keepdims": keepdims}, constants={"axes"}, rtol=1e-5, atol=1e-5)
