"""Concat, Split and nearest Resize on packed int8 codes (vdla.compiler.vdla.moves and their
semantics, vdla.driver.host_ops.vdla.moves): against numpy on the unpacked tensors, and in a
model whose accelerator tensors no longer cross to fp32 around them."""
import numpy as np
import pytest
from onnx import helper

from vdla.compiler.compile_model import compile_model
from vdla.compiler.graph.passes import memory_plan
from vdla.driver.executor import Executor
from vdla.driver.host_ops.vdla import OPS
from vdla.driver.runtime.layout import pack_activation, unpack_activation

from ..graph.onnx_graphs import const, onnx_model, onnxruntime_outputs, tensor

n = helper.make_node


def test_the_semantics_are_numpys_on_the_unpacked_tensors(rng):
    a = rng.integers(-128, 128, (1, 32, 5, 6), dtype=np.int8)
    b = rng.integers(-128, 128, (1, 20, 5, 6), dtype=np.int8)
    pa, pb = pack_activation(a, 1, 16), pack_activation(b, 1, 16)
    (cat,) = OPS["VdlaConcat"]([pa, pb], {})
    np.testing.assert_array_equal(unpack_activation(cat, 1, 52), np.concatenate([a, b], axis=1))
    first, second = OPS["VdlaSplit"]([cat], {"blocks": [2, 2]})
    np.testing.assert_array_equal(unpack_activation(first, 1, 32), a)
    np.testing.assert_array_equal(unpack_activation(second, 1, 20), b)
    pixels = np.repeat(np.repeat(np.arange(30).reshape(5, 6), 2, axis=0), 2, axis=1)
    (up,) = OPS["VdlaGatherPixels"]([pa, pixels], {})
    np.testing.assert_array_equal(unpack_activation(up, 1, 32), a.repeat(2, axis=2).repeat(2, axis=3))


def _neck(rng):
    """YOLO's C2f and neck in small: conv+SiLU, Split into halves, a bottleneck conv on one,
    Concat of the three, 2x nearest upsampling, Concat with a skip, conv."""
    def w(o, c, k):
        return const(f"w{o}_{c}_{k}", (rng.standard_normal((o, c, k, k)) * 0.15).astype(np.float32))
    def silu(x, y):
        return [n("Sigmoid", [x], [y + "_s"]), n("Mul", [x, y + "_s"], [y])]
    nodes = [n("Conv", ["x", "w32_16_1"], ["c1"]), *silu("c1", "a1"),
             n("Split", ["a1", "halves"], ["h1", "h2"], axis=1),
             n("Conv", ["h2", "w16_16_3"], ["c2"], pads=[1, 1, 1, 1]), *silu("c2", "a2"),
             n("Concat", ["h1", "h2", "a2"], ["cat"], axis=1, name="concat"),
             n("Conv", ["cat", "w32_48_1"], ["c3"]), *silu("c3", "a3"),
             n("Resize", ["a3", "", "scales"], ["up"], mode="nearest", name="resize"),
             n("Conv", ["x", "w16_16_3"], ["skip"], pads=[1, 1, 1, 1], strides=[1, 1]),
             n("MaxPool", ["skip"], ["skip_up"], kernel_shape=[1, 1]),
             n("Concat", ["up", "skip_up"], ["cat2"], axis=1, name="concat2"),
             n("Conv", ["cat2", "w16_48_1"], ["y"])]
    return onnx_model(nodes, [tensor("x", (1, 16, 8, 8))], [tensor("y", (1, 16, 16, 16))],
                      [w(32, 16, 1), w(16, 16, 3), w(32, 48, 1), w(16, 48, 1),
                       const("halves", np.array([16, 16], np.int64)),
                       const("scales", np.array([1, 1, 2, 2], np.float32))])


def _neck16(rng):
    """The neck on a 16x16 image halved by a max pooling: the skip branch runs at 8x8 and meets the
    upsampled map."""
    m = _neck(rng)
    m.graph.input[0].type.tensor_type.shape.dim[2].dim_value = 16
    m.graph.input[0].type.tensor_type.shape.dim[3].dim_value = 16
    m.graph.node[0].input[0] = "x_half"
    m.graph.node.insert(0, n("MaxPool", ["x"], ["x_half"], kernel_shape=[2, 2], strides=[2, 2]))
    return m


def test_a_neck_keeps_its_tensors_packed_around_split_concat_and_resize(rng, monkeypatch):
    m = _neck16(rng)
    calib = {"x": rng.standard_normal((6, 1, 16, 16, 16)).astype(np.float32)}
    art = compile_model(m, target="vdla", hw_config="pynq", calibration=calib)
    place = art.header["compile"]["placement"]
    moves = {k: v for k, v in place.items() if v.get("packed")}
    assert {k.split("_")[0] for k in moves} == {"Split", "concat", "concat2"}, place
    # the Split and both Concats lay their parts side by side; the 2x Resize is an accelerator op
    assert all("no copy: the memory plan lays" in v["reason"] for v in moves.values()), place
    assert [s.kind for s in art.plan.steps if s.name in moves] == ["parts", "parts", "parts"]
    assert place["resize"]["device"] == "vdla"
    x = rng.standard_normal((1, 16, 16, 16)).astype(np.float32)
    ex = Executor(art)
    got = ex.run({"x": x}, profile=True)["y"]
    np.testing.assert_array_equal(got, Executor(art, device="numpy").run({"x": x})["y"])
    want = onnxruntime_outputs(m, {"x": x})[0].astype(np.float64)
    assert 10 * np.log10(np.sum(want ** 2) / np.sum((got - want) ** 2)) > 30
    # only the model's input is quantized and its output dequantized: nothing crosses in between
    ops = [t.op for t in ex.last_timings if t.kind in ("host", "kernel") and t.op.startswith("Vdla")]
    assert ops == ["VdlaQuantize", "VdlaDequantize"], ops
    # the same model with every move a copy (the memory plan's parts turned off) gives the same codes
    monkeypatch.setattr(memory_plan, "PART_OPS", {})
    copies = compile_model(m, target="vdla", hw_config="pynq", calibration=calib)
    assert not [s for s in copies.plan.steps if s.kind == "parts"]
    np.testing.assert_array_equal(Executor(copies).run({"x": x})["y"], got)


def test_a_concat_of_other_zero_points_stays_in_fp32_with_its_reason(rng):
    """A QDQ model may give a Concat's inputs grids of different zero points; codes cannot be
    joined then, so the Concat runs in fp32 and says so."""
    from vdla.compiler.vdla.moves import move_problem, quantize_move   # noqa: F401 (the path under test)
    nodes = [n("Conv", ["x", "w"], ["a"]), n("Conv", ["x", "w"], ["b0"]), n("Relu", ["b0"], ["b"]),
             n("Concat", ["a", "b"], ["y"], axis=1, name="concat")]
    qdq = []
    for t, zp in (("a", 5), ("b", -60)):
        qdq += [n("QuantizeLinear", [t, f"{t}_s", f"{t}_z"], [f"{t}_q"]),
                n("DequantizeLinear", [f"{t}_q", f"{t}_s", f"{t}_z"], [f"{t}_dq"])]
    nodes[-1] = n("Concat", ["a_dq", "b_dq"], ["y"], axis=1, name="concat")
    w = (rng.standard_normal((16, 16, 1, 1)) * 0.3).astype(np.float32)
    m = onnx_model(nodes[:3] + qdq + nodes[3:], [tensor("x", (1, 16, 4, 4))], [tensor("y", (1, 32, 4, 4))],
                   [const("w", w), const("a_s", np.float32(0.02)), const("a_z", np.int8(5)),
                    const("b_s", np.float32(0.01)), const("b_z", np.int8(-60))])
    art = compile_model(m, target="vdla", hw_config="pynq")
    concat = art.header["compile"]["placement"]["concat"]
    assert concat["device"] == "cpu" and "different zero points" in concat["reason"] and not concat.get("packed")
    assert concat["reason"].endswith("(no copy: the memory plan lays its inputs in its output side by side)")
    x = rng.standard_normal((1, 16, 4, 4)).astype(np.float32)
    np.testing.assert_array_equal(Executor(art).run({"x": x})["y"], Executor(art, device="numpy").run({"x": x})["y"])


@pytest.mark.parametrize("mode", ["asymmetric", "half_pixel"])
def test_the_pixels_a_nearest_resize_copies_are_the_resize_ops_own(mode):
    from vdla.compiler.frontend import import_onnx
    from vdla.compiler.graph import optimize
    from vdla.compiler.vdla.moves import source_pixels
    m = onnx_model([n("Resize", ["x", "", "scales"], ["y"], mode="nearest", coordinate_transformation_mode=mode,
                      name="resize")], [tensor("x", (1, 16, 3, 5))], [tensor("y", (1, 16, 6, 10))],
                   [const("scales", np.array([1, 1, 2, 2], np.float32))])
    g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
    pixels = source_pixels(g, next(x for x in g.nodes if x.op == "Resize"))
    image = np.arange(15, dtype=np.float32).reshape(1, 1, 3, 5).repeat(16, axis=1)
    want = onnxruntime_outputs(m, {"x": image})[0][0, 0]
    np.testing.assert_array_equal(pixels, want)


def test_the_compile_summary_counts_the_moves_done_in_place(rng, tmp_path, capsys):
    import onnx
    from vdla.driver.cli import main
    m = _neck16(rng)
    onnx.save(m, tmp_path / "neck.onnx")
    np.savez(tmp_path / "calib.npz", x=rng.standard_normal((4, 1, 16, 16, 16)).astype(np.float32))
    assert main(["compile", str(tmp_path / "neck.onnx"), "-o", str(tmp_path / "neck.vdla"), "--target", "vdla",
                 "--calibrate", str(tmp_path / "calib.npz")]) == 0
    assert "3 in place)" in capsys.readouterr().out      # the Split and both Concats
