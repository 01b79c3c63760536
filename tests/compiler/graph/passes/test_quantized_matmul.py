"""pack_quantized_matmul (vdla.compiler.graph.passes.quantized_matmul): QLinearMatMul by a
constant int8 weight runs as the uint8 x int8 panel matmul kernel and a per-column requantize
(kernels, no host step), equal to onnxruntime's QLinearMatMul; what the kernel cannot take
stays a QLinearMatMul."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from ort_oracle import ORT_EXACT_INT8_WEIGHTS
from vdla.compiler.compile_model import compile_model
from vdla.compiler.intrin import cpu as cpu_intrinsics
from vdla.driver.executor import Executor

from ..onnx_graphs import const, onnx_model, onnxruntime_outputs, tensor


def _qlinear_matmul(rng, a_shape, n, out_dtype=TensorProto.UINT8, w_scale_shape=(), a_zero=3, w_zero=0,
                    weights=ORT_EXACT_INT8_WEIGHTS):
    k = a_shape[-1]
    out_np = np.uint8 if out_dtype == TensorProto.UINT8 else np.int8
    inits = [const("w", rng.integers(*weights, (k, n)).astype(np.int8)),
             const("as", np.float32(0.02)), const("az", np.uint8(a_zero)),
             const("ws", rng.uniform(0.005, 0.02, w_scale_shape).astype(np.float32)),
             const("wz", np.full(w_scale_shape, w_zero, np.int8)),
             const("ys", np.float32(0.6)), const("yz", out_np(5))]
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "w", "ws", "wz", "ys", "yz"], ["y"])
    out_shape = (*a_shape[:-1], n)
    model = onnx_model([node], [tensor("a", a_shape, TensorProto.UINT8)], [tensor("y", out_shape, out_dtype)], inits)
    return model, {"a": rng.integers(0, 256, a_shape).astype(np.uint8)}


@pytest.mark.parametrize("a_shape, n, out_dtype, w_scale_shape", [
    ((197, 192), 64, TensorProto.UINT8, ()),            # ViT's tokens: a prime row count
    ((2, 24, 32), 48, TensorProto.UINT8, (48,)),         # batched rows, per-column weight scales
    ((16, 8), 16, TensorProto.UINT8, ()),
], ids=["tokens", "batched_per_column", "small"])
def test_a_qlinear_matmul_runs_as_the_int8_kernel_and_equals_onnxruntime(a_shape, n, out_dtype, w_scale_shape, rng):
    model, feeds = _qlinear_matmul(rng, a_shape, n, out_dtype, w_scale_shape)
    artifact = compile_model(model)
    steps = artifact.plan.steps
    assert "host" not in [s.kind for s in steps]
    assert any(s.op == "QMatMulInt8+RequantizeChannels" for s in steps)
    assert ("Pad" in [s.op for s in steps]) == (a_shape == (197, 192))   # 197 rows: no whole row tiles
    got = Executor(artifact).run(feeds)["y"]
    want = onnxruntime_outputs(model, feeds)[0]
    assert got.dtype == want.dtype and got.shape == want.shape
    # the requantization rounds in float32 like onnxruntime's; a tie may round the other way
    assert np.abs(got.astype(np.int32) - want.astype(np.int32)).max() <= 1


@pytest.mark.parametrize("signed", [True, False], ids=["host_rules", "unsigned_products"])
@pytest.mark.parametrize("weights", [(-127, 128), (-128, 128)], ids=["symmetric", "with_minus_128"])
def test_full_range_operands_equal_the_onnx_definition(weights, signed, rng, monkeypatch):
    """Whole-range activations and weights, extreme pairs included, against QLinearMatMul's
    definition in numpy's integers (onnxruntime's x86 kernels without VNNI saturate some); with
    the host's rules and with those of a target that multiplies unsigned bytes."""
    if not signed:
        monkeypatch.setattr(cpu_intrinsics, "signed_products", lambda target: False)
    model, feeds = _qlinear_matmul(rng, (24, 64), 32, weights=weights)
    c = {i.name: numpy_helper.to_array(i).copy() for i in model.graph.initializer}
    feeds["a"][0, :4] = [255, 255, 0, 0]
    c["w"][:4, 0] = [weights[0], weights[0], 127, 127]
    model.graph.initializer[0].CopyFrom(numpy_helper.from_array(c["w"], "w"))
    artifact = compile_model(model)
    assert "host" not in [s.kind for s in artifact.plan.steps]
    got = Executor(artifact).run(feeds)["y"]
    acc = (feeds["a"].astype(np.int64) - int(c["az"])) @ c["w"].astype(np.int64)
    want = np.clip(np.rint(acc * (np.float64(c["as"]) * np.float64(c["ws"]) / np.float64(c["ys"]))) + int(c["yz"]),
                   0, 255)
    assert np.abs(got.astype(np.int64) - want).max() <= 1 and np.mean(got == want) > 0.97


@pytest.mark.parametrize("n, w_zero", [(40, 0), (32, 1)], ids=["columns_not_blocks", "weight_zero_point"])
def test_what_the_kernel_cannot_take_stays_a_qlinear_matmul(n, w_zero, rng):
    model, feeds = _qlinear_matmul(rng, (8, 16), n, w_zero=w_zero)
    artifact = compile_model(model)
    assert [s.op for s in artifact.plan.steps] == ["QLinearMatMul"]
    got = Executor(artifact).run(feeds)["y"]
    assert np.abs(got.astype(np.int32) - onnxruntime_outputs(model, feeds)[0].astype(np.int32)).max() <= 1
