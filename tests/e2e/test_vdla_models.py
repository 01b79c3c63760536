"""Whole models on VDLA: a float model compiled with calibration runs on the simulated
accelerator, its output equals bit for bit the numpy interpretation of the quantized graph
(the accelerator nodes' host ops), and its accuracy against the float model holds up against
onnxruntime's own int8 quantization of the same model with the same calibration samples."""
import os

import numpy as np
import onnx
import pytest

from vdla.compiler.compile_model import compile_model
from vdla.driver.executor import Executor

from model_builders import small_cnn, vdla_cnn

ort = pytest.importorskip("onnxruntime")


def _sqnr(ref, got):
    ref, got = np.concatenate([r.ravel() for r in ref]), np.concatenate([g.ravel() for g in got])
    return 10 * np.log10((ref ** 2).sum() / ((got - ref) ** 2).sum())


def _ort_int8(model, calib, tmp_path, fmt="QDQ"):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.samples = iter([{"input": c} for c in calib])

        def get_next(self):
            return next(self.samples, None)
    src, dst = os.path.join(tmp_path, "float.onnx"), os.path.join(tmp_path, "int8.onnx")
    onnx.save(model, src)
    quantize_static(src, dst, Reader(), quant_format=getattr(QuantFormat, fmt), per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    return ort.InferenceSession(dst)


@pytest.fixture(scope="module")
def compiled():
    model = vdla_cnn()
    rng = np.random.default_rng(0)
    calib = rng.standard_normal((8, 1, 3, 32, 32)).astype(np.float32)
    tests = [rng.standard_normal((1, 3, 32, 32)).astype(np.float32) for _ in range(6)]
    return model, calib, tests, compile_model(model, target="vdla", hw_config="pynq", calibration={"input": calib})


def test_small_cnn_on_the_simulator_equals_the_quantized_graph_and_keeps_accuracy(compiled, tmp_path):
    model, calib, tests, art = compiled
    kinds = {s.op: s.kind for s in art.plan.steps}
    assert kinds["VdlaConv"] == kinds["VdlaPool"] == "vdla"
    place = art.header["compile"]["placement"]          # the residual Add: in the last conv's epilogue
    (add,) = [name for name in place if name.startswith("Add")]
    assert place[add]["device"] == "vdla" and place[place[add]["fused_into"]]["device"] == "vdla"
    sim, numpy_ref = Executor(art), Executor(art, device="numpy")
    fp32 = ort.InferenceSession(model.SerializeToString())
    int8 = _ort_int8(model, calib, tmp_path)
    ours, ref, theirs = [], [], []
    for x in tests:
        y = sim.run({"input": x})
        np.testing.assert_array_equal(y[model.graph.output[0].name], numpy_ref.run({"input": x})[model.graph.output[0].name])
        ours.append(y[model.graph.output[0].name])
        ref.append(fp32.run(None, {"input": x})[0])
        theirs.append(int8.run(None, {"input": x})[0])
    assert all(r.cycles > 0 for r in sim.last_launches.values())
    assert _sqnr(ref, ours) >= _sqnr(ref, theirs) - 1.0, (_sqnr(ref, ours), _sqnr(ref, theirs))


def test_every_cpu_node_has_a_reason(compiled):
    *_, art = compiled
    place = art.header["compile"]["placement"]
    cpu = {n: p["reason"] for n, p in place.items() if p["device"] == "cpu"}
    assert any("Softmax: no ALU equivalent" in r for r in cpu.values())
    assert any("single accumulator element" in r for r in cpu.values())      # the 10-class Gemm
    assert all(r for r in cpu.values())
    offloaded = sum(p["macs"] for p in place.values() if p["device"] == "vdla")
    assert offloaded / sum(p["macs"] for p in place.values()) > 0.99


def test_float_model_without_calibration_names_the_flag():
    with pytest.raises(ValueError, match="--calibrate CALIB.npz"):
        compile_model(vdla_cnn(), target="vdla", hw_config="pynq")


@pytest.mark.parametrize("name,min_offload", [("resnet18", 0.95), ("mobilenetv2", 0.90)])
def test_imagenet_models_on_the_simulator(name, min_offload, tmp_path):
    """ResNet-18 and MobileNetV2 at 224x224, compiled for vdla with four calibration samples:
    bit-exact to the quantized graph's interpretation, most MACs on the accelerator, and at
    least as accurate against the float model as onnxruntime's int8 with the same samples,
    less 1 dB (ReLU outputs use zero point -128, the DMA pads them with it)."""
    import model_builders
    model = getattr(model_builders, name)()
    rng = np.random.default_rng(0)
    calib = rng.standard_normal((4, 1, 3, 224, 224)).astype(np.float32)
    art = compile_model(model, target="vdla", hw_config="pynq", calibration={"input": calib})
    place = art.header["compile"]["placement"]
    macs = sum(p["macs"] for p in place.values())
    assert sum(p["macs"] for p in place.values() if p["device"] == "vdla") >= min_offload * macs
    out = model.graph.output[0].name
    sim = Executor(art)
    fp32 = ort.InferenceSession(model.SerializeToString())
    int8 = _ort_int8(model, list(calib), tmp_path)
    ours, ref, theirs = [], [], []
    for k in range(2):
        x = rng.standard_normal((1, 3, 224, 224)).astype(np.float32)
        y = sim.run({"input": x})[out]
        if k == 0:
            np.testing.assert_array_equal(y, Executor(art, device="numpy").run({"input": x})[out])
        ours.append(y)
        ref.append(fp32.run(None, {"input": x})[0])
        theirs.append(int8.run(None, {"input": x})[0])
    assert _sqnr(ref, ours) >= _sqnr(ref, theirs) - 1.0, (_sqnr(ref, ours), _sqnr(ref, theirs))


def test_qdq_model_compiles_without_calibration_and_reproduces_onnxruntime(compiled, tmp_path):
    """onnxruntime's quantize_static output (QDQ, per-channel int8 weights, int8 activations):
    its quantizers give the ranges, ReLUs folded into them come back as clips, and the
    accelerator reproduces onnxruntime's own run of that int8 model."""
    model, calib, tests, _ = compiled
    qdq_path = os.path.join(tmp_path, "int8.onnx")
    session = _ort_int8(model, calib, tmp_path)
    qdq = onnx.load(qdq_path)
    art = compile_model(qdq, target="vdla", hw_config="pynq")
    assert art.header["compile"]["ranges_from"] == "the model's quantizers"
    place = art.header["compile"]["placement"]
    assert sum(p["macs"] for p in place.values() if p["device"] == "vdla") > 0.99 * sum(
        p["macs"] for p in place.values())
    # vdla info's SQNR column: each accelerator node's error, measured on seeded random inputs
    assert art.header["compile"]["sqnr_from"] == "seeded standard-normal inputs"
    measured = [p["sqnr_db"] for p in place.values() if p["device"] == "vdla" and not p.get("fused_into")
                and p["macs"]]
    assert measured and all(20.0 < db < 80.0 for db in measured), measured
    sim = Executor(art)
    out = qdq.graph.output[0].name
    ours, theirs = [], []
    for x in tests:
        ours.append(sim.run({"input": x})[out])
        theirs.append(session.run(None, {"input": x})[0])
    assert _sqnr(theirs, ours) >= 30.0


def test_qoperator_model_with_contrib_ops_on_cpu_and_vdla(compiled, tmp_path):
    """onnxruntime's QOperator output (QLinearConv and the com.microsoft QLinearAdd,
    QLinearGlobalAveragePool, QGemm, QLinearSoftmax): on the CPU it equals onnxruntime's run;
    compiled for VDLA without calibration it reproduces it."""
    model, calib, tests, _ = compiled
    session = _ort_int8(model, calib, tmp_path, fmt="QOperator")
    qop = onnx.load(os.path.join(tmp_path, "int8.onnx"))
    assert {"QLinearAdd", "QLinearGlobalAveragePool"} <= {n.op_type for n in qop.graph.node if n.domain}
    out = qop.graph.output[0].name
    on_cpu = Executor(compile_model(qop, target="cpu"))
    on_vdla = Executor(compile_model(qop, target="vdla", hw_config="pynq"))
    ours, theirs = [], []
    for x in tests:
        want = session.run(None, {"input": x})[0]
        np.testing.assert_allclose(on_cpu.run({"input": x})[out], want, rtol=0, atol=1e-6)
        ours.append(on_vdla.run({"input": x})[out])
        theirs.append(want)
    assert _sqnr(theirs, ours) >= 30.0


@pytest.mark.parametrize("triple", ["armv7a-linux-gnueabihf", "aarch64-linux-gnu"])
def test_host_triple_compiles_the_cpu_part_for_the_board(compiled, triple):
    """--host-triple: the accelerator programs are the same, the CPU nodes are compiled for the
    board's ARM cores (and this x86 machine refuses to run them, naming why)."""
    model, calib, tests, _ = compiled
    art = compile_model(model, target="vdla", hw_config="pynq", calibration={"input": calib[:2]},
                        host_triple=triple)
    assert art.header["target"]["triple"] == triple
    assert list(art.header["kernels"]) == [triple] and art.objects
    import platform
    if not platform.machine().startswith(("arm", "aarch")):
        from vdla.driver.artifact import ArtifactError
        with pytest.raises(ArtifactError, match="target mismatch"):
            Executor(art)


def test_builders_small_cnn_mostly_on_the_cpu_still_exact_and_accurate(tmp_path):
    """The test builders' small CNN (LeakyRelu, HardSwish, Sigmoid gating, Concat, reflect Pad,
    AveragePool, ...): its convolutions and its max pooling run on the accelerator, the
    activations that alone follow a convolution as its lookup table, everything else on the CPU
    with a reason; bit-exact to the quantized graph, accurate against onnxruntime int8 with the
    same calibration samples."""
    model = small_cnn()
    rng = np.random.default_rng(1)
    calib = rng.standard_normal((6, 2, 3, 32, 32)).astype(np.float32)
    art = compile_model(model, target="vdla", hw_config="pynq", calibration={"input": calib})
    place = art.header["compile"]["placement"]
    assert {p["device"] for n, p in place.items() if n.startswith("Conv")} == {"vdla"}
    tables = {n.split("_")[0] for n, p in place.items() if p.get("table")}
    assert {"LeakyRelu", "HardSwish"} <= tables and all(place[n]["device"] == "vdla" for n in place
                                                         if n.split("_")[0] in tables)
    sim, numpy_ref = Executor(art), Executor(art, device="numpy")
    fp32 = ort.InferenceSession(model.SerializeToString())
    int8 = _ort_int8(model, [c for c in calib], tmp_path)
    out = model.graph.output[0].name
    ours, ref, theirs = [], [], []
    for _ in range(3):
        x = rng.standard_normal((2, 3, 32, 32)).astype(np.float32)
        y = sim.run({"input": x})[out]
        np.testing.assert_array_equal(y, numpy_ref.run({"input": x})[out])
        ours.append(y)
        ref.append(fp32.run(None, {"input": x})[0])
        theirs.append(int8.run(None, {"input": x})[0])
    assert _sqnr(ref, ours) >= _sqnr(ref, theirs) - 1.0, (_sqnr(ref, ours), _sqnr(ref, theirs))


def test_global_average_pool_of_a_1x1_map_is_offloaded_exactly():
    """ResNet-18 at 32x32 reaches the global average pool with a 1x1 map: its factor 2^15 / 1
    overflowed the ALU's 16-bit immediate and the model failed to compile."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(3)
    w = numpy_helper.from_array(rng.standard_normal((16, 16, 1, 1)).astype(np.float32) * 0.3, "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["input", "w"], ["c"]), helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("MaxPool", ["r"], ["m"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("GlobalAveragePool", ["m"], ["g"]), helper.make_node("Flatten", ["g"], ["out"])],
        "gap1x1", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 16, 2, 2])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 16])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=9)
    calib = rng.standard_normal((8, 1, 16, 2, 2)).astype(np.float32)
    art = compile_model(model, target="vdla", hw_config="pynq", calibration={"input": calib})
    pools = [s for s in art.plan.steps if s.op == "VdlaPool"]
    assert len(pools) == 2 and all(s.kind == "vdla" for s in pools)
    x = rng.standard_normal((1, 16, 2, 2)).astype(np.float32)
    got = Executor(art).run({"input": x})["out"]
    np.testing.assert_array_equal(got, Executor(art, device="numpy").run({"input": x})["out"])
    ref = ort.InferenceSession(model.SerializeToString()).run(None, {"input": x})[0]
    assert _sqnr([ref], [got]) > 30


def _silu_cnn():
    """Convolutions with SiLU (Sigmoid and Mul, on the CPU) between them, a squeeze-excitation
    (GlobalAveragePool, 1x1 convs, Sigmoid, Mul) and a padded 3x3 conv: EfficientNet's pattern."""
    from e2e.model_builders import ModelBuilder
    b = ModelBuilder("silu_cnn", 3)

    def silu(y):
        return b.node("Mul", [y, b.node("Sigmoid", [y])])
    y = silu(b.conv("input", 3, 32, 3, 2, bias=True))
    y = silu(b.conv(y, 32, 32, 3, 1, groups=32, bias=True))
    s = silu(b.conv(b.node("GlobalAveragePool", [y]), 32, 16, 1, bias=True))
    y = b.node("Mul", [y, b.node("Sigmoid", [b.conv(s, 16, 32, 1, bias=True)])])
    y = silu(b.conv(y, 32, 32, 3, 1, bias=True))
    return b.model("input", (1, 3, 32, 32), b.conv(y, 32, 16, 1, bias=True), (1, 16, 16, 16))


def test_a_qdq_silu_model_reproduces_onnxruntime_where_the_cpu_runs_its_pairs(tmp_path):
    """The CPU's SiLU and squeeze-excitation between accelerator convs read their tensors
    through the model's own quantize-dequantize pairs, and the accelerator quantizes on the
    model's grids (its zero points included): the compiled QDQ model follows onnxruntime's run
    of it closely."""
    model = _silu_cnn()
    rng = np.random.default_rng(4)
    calib = rng.standard_normal((8, 1, 3, 32, 32)).astype(np.float32)
    session = _ort_int8(model, calib, tmp_path)
    qdq = onnx.load(os.path.join(tmp_path, "int8.onnx"))
    art = compile_model(qdq, target="vdla", hw_config="pynq")
    ops = {s.op for s in art.plan.steps}
    assert {"QuantizeLinear", "DequantizeLinear", "Sigmoid", "VdlaConv"} <= ops, ops
    sim = Executor(art)
    ours, theirs = [], []
    for _ in range(3):
        x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
        ours.append(sim.run({"input": x})[qdq.graph.output[0].name])
        theirs.append(session.run(None, {"input": x})[0])
    assert _sqnr(theirs, ours) >= 30.0, _sqnr(theirs, ours)


def test_a_recurrent_layer_on_the_cpu_part_runs_as_its_kernel():
    """A vdla compile's CPU part takes the CPU pipeline's form of an LSTM (the projection matmul
    and the recurrence kernel), not a numpy host step; the quantized head stays accurate."""
    import vision_builders as vb
    model = vb.lstm_classifier()
    rng = np.random.default_rng(0)
    name = model.graph.input[0].name
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    calib = rng.standard_normal([8] + shape).astype(np.float32)
    art = compile_model(model, target="vdla", calibration={name: calib})
    steps = {s.op: s.kind for s in art.plan.steps}
    assert steps.get("LSTMScan") == "kernel" and "LSTM" not in steps, art.header["compile"]["host_reasons"]
    lstm = next(n.name for n in model.graph.node if n.op_type == "LSTM")
    assert art.header["compile"]["placement"][lstm]["device"] == "cpu"
    assert art.header["compile"]["placement"][lstm]["reason"]
    fp32 = ort.InferenceSession(model.SerializeToString())
    x = rng.standard_normal(shape).astype(np.float32)
    out = model.graph.output[0].name
    assert _sqnr([fp32.run(None, {name: x})[0]], [Executor(art).run({name: x})[out]]) > 30


def test_a_transposed_conv_and_an_instance_norm_on_the_cpu_part_run_as_kernels():
    """The accelerator takes neither: the CPU part runs them as the CPU pipeline does (a Conv
    over the output phases and their interleave; LayerNormalization's kernel), no numpy step."""
    from model_builders import ModelBuilder
    b = ModelBuilder("decoder", seed=5)
    y = b.node("Relu", [b.conv("input", 8, 16, 3, bias=True)])
    y = b.node("ConvTranspose", [y, b.const("up", (0.2 * b.rng.standard_normal((16, 8, 4, 4))).astype(np.float32))],
               strides=[2, 2], pads=[1, 1, 1, 1])
    y = b.node("InstanceNormalization", [y, b.const("s", np.full(8, 1.5, np.float32)),
                                         b.const("bn", np.zeros(8, np.float32))])
    y = b.node("Relu", [b.conv(y, 8, 8, 3, bias=True)])
    model = b.model("input", (1, 8, 12, 12), y, (1, 8, 24, 24))
    rng = np.random.default_rng(0)
    calib = rng.standard_normal((8, 1, 8, 12, 12)).astype(np.float32)
    art = compile_model(model, target="vdla", calibration={"input": calib})
    kinds = {s.op: s.kind for s in art.plan.steps}
    assert "ConvTranspose" not in kinds and "InstanceNormalization" not in kinds, kinds
    assert kinds.get("LayerNormalization") == "kernel" and "vdla" in kinds.values(), kinds
    x = rng.standard_normal((1, 8, 12, 12)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString()).run(None, {"input": x})[0]
    db = _sqnr([want], [Executor(art).run({"input": x})[model.graph.output[0].name]])
    assert db > 25
