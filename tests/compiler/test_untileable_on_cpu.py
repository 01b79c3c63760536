"""Layers no VDLA schedule fits run on the CPU instead of failing the compile: a conv whose
output is one pixel of one channel block (the accumulator hazard rule), and layers too big for
a config's small SRAMs. Each is placed on the CPU with a reason naming the constraint (the
artifact's placement, `vdla compile`'s summary, `vdla info`), and the model's output is still
the quantized graph's bit for bit and close to the float model (onnxruntime)."""
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from vdla.compiler.compile_model import compile_model
from vdla.compiler.frontend.example_models import small_residual_cnn
from vdla.driver.cli import main
from vdla.driver.devices import SimulatorDevice
from vdla.driver.executor import Executor
from vdla.hw import HwConfig, load_config

ort = pytest.importorskip("onnxruntime")

PYNQ = load_config("pynq")


def _conv(name, x, cin, cout, k, pad, rng, relu=True):
    w = (rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32) * 0.1
    inits = [numpy_helper.from_array(w, f"{name}_w"), numpy_helper.from_array(b, f"{name}_b")]
    nodes = [helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_y"], name=name,
                              kernel_shape=[k, k], pads=[pad] * 4)]
    if relu:
        nodes.append(helper.make_node("Relu", [f"{name}_y"], [f"{name}_r"], name=f"{name}_relu"))
    return nodes, inits, nodes[-1].output[0]


def one_pixel_model() -> onnx.ModelProto:
    """3x3 -> conv3x3 (16 ch) -> valid conv3x3 to one pixel of 8 channels (one block: no tiling)
    -> 1x1 conv to 32 channels (two blocks: on the accelerator again, reading the CPU's tensor)."""
    rng = np.random.default_rng(3)
    nodes, inits, x = [], [], "input"
    for name, cin, cout, k, pad in (("wide", 16, 16, 3, 1), ("one_pixel", 16, 8, 3, 0), ("expand", 8, 32, 1, 0)):
        n, i, x = _conv(name, x, cin, cout, k, pad, rng, relu=name != "expand")
        nodes += n
        inits += i
    graph = helper.make_graph(nodes, "one_pixel", [helper.make_tensor_value_info("input", TensorProto.FLOAT,
                                                                                 [1, 16, 3, 3])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 32, 1, 1])], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)


def _sqnr(ref, got):
    ref, got = np.concatenate([r.ravel() for r in ref]), np.concatenate([g.ravel() for g in got])
    return 10 * np.log10((ref ** 2).sum() / ((got - ref) ** 2).sum())


def _ort_int8(model, calib, folder):
    """onnxruntime's own static int8 quantization of the model with the same samples."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Samples(CalibrationDataReader):
        def __init__(self):
            self.samples = iter([{"input": c} for c in calib])

        def get_next(self):
            return next(self.samples, None)
    onnx.save(model, folder / "float.onnx")
    quantize_static(str(folder / "float.onnx"), str(folder / "int8.onnx"), Samples(), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    return ort.InferenceSession(str(folder / "int8.onnx"))


def _check_outputs(model, art, config, calib, inputs, folder):
    """Simulator == numpy interpretation of the quantized graph, bit for bit, and as close to
    onnxruntime's fp32 as onnxruntime's own int8 with the same calibration samples, less 1 dB."""
    out = model.graph.output[0].name
    sim = Executor(art, device=SimulatorDevice(config, dram_bytes=1 << 26))
    ref = Executor(art, device="numpy")
    fp32, int8 = ort.InferenceSession(model.SerializeToString()), _ort_int8(model, calib, folder)
    ours = [sim.run({"input": x})[out] for x in inputs]
    for x, y in zip(inputs, ours):
        np.testing.assert_array_equal(y, ref.run({"input": x})[out])
    exact = [fp32.run(None, {"input": x})[0] for x in inputs]
    theirs = [int8.run(None, {"input": x})[0] for x in inputs]
    assert _sqnr(exact, ours) >= _sqnr(exact, theirs) - 1.0, (_sqnr(exact, ours), _sqnr(exact, theirs))
    return sim


@pytest.fixture(scope="module")
def one_pixel():
    model = one_pixel_model()
    rng = np.random.default_rng(0)
    calib = rng.standard_normal((32, 1, 16, 3, 3)).astype(np.float32)
    art = compile_model(model, target="vdla", hw_config=PYNQ, calibration={"input": calib})
    return model, calib, art


def test_a_one_pixel_one_block_conv_runs_on_the_cpu_with_the_constraint_as_its_reason(one_pixel, tmp_path):
    model, calib, art = one_pixel
    place = art.header["compile"]["placement"]
    assert place["one_pixel"]["device"] == "cpu"
    assert place["one_pixel"]["reason"].startswith(f"no VDLA tiling fits {PYNQ.name}: ")
    assert "acc_raw_min_distance" in place["one_pixel"]["reason"]
    assert place["one_pixel"]["macs"] == 8 * 16 * 9
    assert place["one_pixel_relu"] == {"device": "cpu", "macs": 0, "reason": "its producer one_pixel runs on the CPU"}
    assert place["wide"]["device"] == place["expand"]["device"] == "vdla"
    ops = {s.name: s.kind for s in art.plan.steps}
    assert ops["wide"] == ops["expand"] == "vdla" and ops["one_pixel"] != "vdla"
    rng = np.random.default_rng(7)
    tests = [rng.standard_normal((1, 16, 3, 3)).astype(np.float32) for _ in range(8)]
    sim = _check_outputs(model, art, PYNQ, list(calib), tests, tmp_path)
    assert len(sim.last_launches) == 2


def test_compile_summary_and_info_show_the_reason(one_pixel, tmp_path, capsys):
    model, calib, _ = one_pixel
    onnx.save(model, tmp_path / "m.onnx")
    np.savez(tmp_path / "calib.npz", input=calib)
    assert main(["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.vdla"), "--target", "vdla",
                 "--calibrate", str(tmp_path / "calib.npz")]) == 0
    summary = capsys.readouterr().out
    assert "on the CPU: 1 layer(s)" in summary and "one_pixel (no VDLA tiling fits" in summary
    assert main(["info", str(tmp_path / "m.vdla"), "--json"]) == 0
    nodes = {n["name"]: n for n in json.loads(capsys.readouterr().out.strip().splitlines()[-1])["nodes"]}
    assert nodes["one_pixel"]["placement"] == "cpu" and "acc_raw_min_distance" in nodes["one_pixel"]["reason"]


def test_small_srams_put_the_layers_they_cannot_hold_on_the_cpu(tmp_path):
    """A 512-byte weight SRAM (two 16x16 blocks) holds no 3x3 conv's tile but the RGB stem's
    (its 27 taps read as columns: two blocks), a 256-byte accumulator SRAM (four elements) no
    pooling or Add tile (block_b's conv with the Add in its epilogue needs more: they run apart,
    the conv on the accelerator): the model compiles with those layers on the CPU, each saying
    which SRAM is too small, and its output stays right."""
    model = small_residual_cnn()
    rng = np.random.default_rng(1)
    calib = {"input": rng.standard_normal((8, 1, 3, 32, 32)).astype(np.float32)}
    tests = [rng.standard_normal((1, 3, 32, 32)).astype(np.float32) for _ in range(3)]
    expected = {"LOG_WGT_BUFF_SIZE": ({"conv2", "block_a", "block_b"}, "weight SRAM"),
                "LOG_ACC_BUFF_SIZE": ({"pool1", "gap"}, "accumulator SRAM")}
    # (eight accumulator elements: a conv's smallest tile, two accumulators and its requantizer's
    # three registers per channel block, fits; the pools' windows do not)
    for key, size in (("LOG_WGT_BUFF_SIZE", 9), ("LOG_ACC_BUFF_SIZE", 9)):
        config = HwConfig.from_dict({**PYNQ.to_dict(), key: size})
        art = compile_model(model, target="vdla", hw_config=config, calibration=calib)
        place = art.header["compile"]["placement"]
        untiled = {n for n, p in place.items() if p["reason"].startswith(f"no VDLA tiling fits {config.name}")}
        names, sram = expected[key]
        assert untiled == names, key
        assert all(sram in place[n]["reason"] for n in untiled), key
        assert any(p["device"] == "vdla" for p in place.values()), key      # the rest still offloaded
        _check_outputs(model, art, config, list(calib["input"]), tests, tmp_path)


def _compile_with_timing(timing: dict, image: int):
    model = small_residual_cnn(image=image)
    rng = np.random.default_rng(1)
    calib = {"input": rng.standard_normal((8, 1, 3, image, image)).astype(np.float32)}
    tests = [rng.standard_normal((1, 3, image, image)).astype(np.float32) for _ in range(2)]
    doc = PYNQ.to_dict()
    config = HwConfig.from_dict({**doc, "timing": {**doc["timing"], **timing}})
    art = compile_model(model, target="vdla", hw_config=config, calibration=calib)
    return model, config, art, calib, tests


def _unfit(art) -> dict:
    place = art.header["compile"]["placement"]
    return {n: p["reason"] for n, p in place.items()
            if p["reason"].startswith("no schedule of this layer runs on this hardware")}


def test_legal_timing_that_no_default_schedule_meets_puts_those_layers_on_the_cpu(tmp_path):
    """A value inside the documented range that ended the compile with an error naming no
    layer: now the layers whose kernels cannot run so go to the CPU, each saying why."""
    model, config, art, calib, tests = _compile_with_timing({"acc_raw_min_distance": 64}, 32)
    unfit = _unfit(art)
    assert unfit and all("acc_raw_min_distance" in why for why in unfit.values())
    _check_outputs(model, art, config, list(calib["input"]), tests, tmp_path)


def test_one_token_per_queue_is_met_by_a_measured_schedule(tmp_path):
    """With one token per dependence queue the lowest-estimate schedules of the 16x16 model's
    layers overflow a queue (they once went to the CPU for it); the default's measured
    runner-up schedules do not, so every layer stays on the accelerator, outputs right."""
    model, config, art, calib, tests = _compile_with_timing({"token_queue_depth": 1}, 16)
    assert not _unfit(art)
    _check_outputs(model, art, config, list(calib["input"]), tests, tmp_path)


def test_a_genuinely_bad_config_is_still_a_clear_error():
    """What no placement can help: the config itself does not make an ISA."""
    with pytest.raises(ValueError, match="GEMM fields need 136 bits but the format has 128; reduce the SRAM sizes"):
        compile_model(one_pixel_model(), target="vdla", hw_config={**PYNQ.to_dict(), "LOG_BLOCK": 3},
                      calibration={"input": np.zeros((1, 1, 16, 3, 3), np.float32)})
