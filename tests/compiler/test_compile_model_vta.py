"""compile_model(target="vdla", vta_compat=True): a whole model whose accelerator kernels all
pass the VTA check, run on the simulator bit for bit like the quantized graph's numpy
interpretation, and stay close to the float model; the default mode's kernels are flagged."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from vdla.compiler.compile_model import compile_model
from vdla.compiler.frontend.example_models import small_residual_cnn
from vdla.driver.executor import Executor
from vdla.driver.runtime import KernelProgram
from vdla.driver.runtime.vta_check import check_program_vta
from vdla.hw import load_config

CFG = load_config("pynq")


def _findings(art) -> dict:
    out = {}
    for key in ("vdla_programs", "vdla_programs_1vt"):
        for doc in art.header[key]:
            prog = KernelProgram.from_dict(doc)
            out[f"{key}:{prog.name}"] = sorted({f.kind for f in check_program_vta(prog, CFG)})
    return out


@pytest.fixture(scope="module")
def model_and_data():
    model = small_residual_cnn()
    rng = np.random.default_rng(0)
    calib = rng.standard_normal((8, 1, 3, 32, 32)).astype(np.float32)
    tests = [rng.standard_normal((1, 3, 32, 32)).astype(np.float32) for _ in range(3)]
    return model, {model.graph.input[0].name: calib}, tests


def test_small_cnn_in_vta_mode_checks_clean_and_equals_its_quantized_graph(model_and_data):
    model, calib, tests = model_and_data
    art = compile_model(model, target="vdla", hw_config=CFG, calibration=calib, vta_compat=True)
    kinds = {s.op: s.kind for s in art.plan.steps}
    assert kinds["VdlaConv"] == kinds["VdlaPool"] == kinds["VdlaAdd"] == "vdla"
    assert art.header["compile"]["vta_compat"] is True
    findings = _findings(art)
    assert len(findings) >= 10 and all(k == [] for k in findings.values()), findings
    name_in, name_out = model.graph.input[0].name, model.graph.output[0].name
    sim, interpreted = Executor(art), Executor(art, device="numpy")
    fp32 = Executor(compile_model(model, target="cpu", kernels=False))
    signal = noise = 0.0
    for x in tests:
        y = sim.run({name_in: x})[name_out]
        np.testing.assert_array_equal(y, interpreted.run({name_in: x})[name_out])
        ref = fp32.run({name_in: x})[name_out]
        signal, noise = signal + float((ref ** 2).sum()), noise + float(((y - ref) ** 2).sum())
    assert 10 * np.log10(signal / noise) > 30       # measured 34.7 dB (default mode 39.8)


def test_the_default_mode_of_the_same_model_is_flagged(model_and_data):
    model, calib, _ = model_and_data
    art = compile_model(model, target="vdla", hw_config=CFG, calibration=calib)
    kinds = set().union(*map(set, _findings(art).values()))
    assert {"alu_mul", "alu_setq", "requant", "pad_min", "acc_8bit"} <= kinds


def _conv_then_padded_max_pool():
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((16, 3, 3, 3)).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["c"], ["y"], name="pool", kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 3, 16, 16))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 16, 8, 8))], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_a_padded_max_pool_of_a_signed_tensor_stays_on_the_cpu_in_vta_mode():
    model = _conv_then_padded_max_pool()
    onnx.checker.check_model(model)
    calib = {"x": np.random.default_rng(2).standard_normal((4, 1, 3, 16, 16)).astype(np.float32)}
    place = compile_model(model, target="vdla", hw_config=CFG, calibration=calib,
                          vta_compat=True).header["compile"]["placement"]
    assert place["conv"]["device"] == "vdla"
    assert place["pool"]["device"] == "cpu" and "VTA's DMA pads with zeros only" in place["pool"]["reason"]
    default = compile_model(model, target="vdla", hw_config=CFG, calibration=calib).header["compile"]["placement"]
    assert default["pool"]["device"] == "vdla"          # pad_min pads it with -128 outside VTA mode


def test_vta_mode_options_that_do_not_fit_are_refused():
    with pytest.raises(ValueError, match="vta_compat applies to target 'vdla'"):
        compile_model(small_residual_cnn(), target="cpu", vta_compat=True)
    from vdla.compiler.compile_model import compile_for_vdla
    with pytest.raises(ValueError, match="no per-channel activation scales"):
        compile_for_vdla(small_residual_cnn(), CFG, {"input": np.zeros((1, 1, 3, 32, 32), np.float32)},
                         per_channel_activations=True, vta_compat=True)


def test_vdla_compile_vta_compat_flag(tmp_path, capsys):
    from vdla.driver.artifact import load
    from vdla.driver.cli import main
    onnx.save(small_residual_cnn(), tmp_path / "m.onnx")
    calib = np.random.default_rng(3).standard_normal((4, 1, 3, 32, 32)).astype(np.float32)
    np.savez(tmp_path / "calib.npz", input=calib)
    assert main(["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.vdla"), "--target", "vdla",
                 "--calibrate", str(tmp_path / "calib.npz"), "--vta-compat"]) == 0
    art = load(tmp_path / "m.vdla")
    assert art.header["compile"]["vta_compat"] is True
    assert all(k == [] for k in _findings(art).values())
    assert main(["compile", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "c.vdla"), "--vta-compat"]) == 1
    assert "vta_compat applies to target 'vdla'" in capsys.readouterr().err


def test_an_add_whose_operands_are_far_coarser_than_its_output_is_refused_by_name():
    """y = conv(x, w) + conv(x, -0.999 w): the sum's range is a thousandth of the operands',
    beyond the int8 factors VTA mode multiplies by."""
    rng = np.random.default_rng(4)
    w = rng.standard_normal((16, 3, 3, 3)).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w1"), numpy_helper.from_array(-0.999 * w, "w2")]
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], name="conv_a", pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["x", "w2"], ["b"], name="conv_b", pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["a", "b"], ["y"], name="cancel")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 3, 8, 8))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 16, 8, 8))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    calib = {"x": rng.standard_normal((4, 1, 3, 8, 8)).astype(np.float32)}
    from vdla.compiler.codegen.vdla import VtaCompatError
    with pytest.raises(VtaCompatError, match="cancel: an operand's scale is .* times the output's"):
        compile_model(model, target="vdla", hw_config=CFG, calibration=calib, vta_compat=True)
    compile_model(model, target="vdla", hw_config=CFG, calibration=calib)     # 15-bit factors suffice
