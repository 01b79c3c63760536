"""Whole models compiled for VDLA on the RTL device: the same output as on the simulator device,
and every accelerator step takes the same number of cycles. Besides two CNNs: a transformer
encoder layer (BERT's, with attention's batched MatMuls on the accelerator) and a YOLO neck
(nearest upsampling, Concat and SiLU convolutions, as ultralytics' export writes them)."""
import sys

import numpy as np
import pytest

from vdla.compiler.compile_model import compile_model
from vdla.compiler.vdla import OPS
from vdla.driver.devices.rtl import RtlDevice
from vdla.driver.executor import Executor

from e2e import model_builders
from e2e.model_builders import ModelBuilder, small_cnn, vdla_cnn   # tests/ is on sys.path

sys.modules.setdefault("model_builders", model_builders)     # (as transformer_builders imports it)
from e2e.transformer_builders import bert_encoder, bert_feeds  # noqa: E402

SEQ = 16


def yolo_neck():
    """A stride-2 and a stride-4 feature map (SiLU convs), the deeper one upsampled x2 (Resize
    nearest), concatenated with the other, then a 1x1 and a 3x3 SiLU conv, as in YOLOv8's neck."""
    b = ModelBuilder("yolo_neck", 0)

    def conv(x, cin, cout, k=1, stride=1):
        y = b.conv(x, cin, cout, k, stride, bias=True)
        return b.node("Mul", [y, b.node("Sigmoid", [y])])
    p = conv("input", 3, 16, 3, 2)
    q = conv(p, 16, 32, 3, 2)
    up = b.node("Resize", [q, b.const("roi", np.zeros(0, np.float32)),
                           b.const("scales", np.array([1, 1, 2, 2], np.float32))],
                mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    y = conv(conv(b.node("Concat", [up, p], axis=1), 48, 32), 32, 32, 3)
    return b.model("input", (1, 3, 32, 32), y, (1, 32, 16, 16))


def _images(build, batch):
    rng = np.random.default_rng(0)
    return (build(), {"input": rng.standard_normal((4, batch, 3, 32, 32)).astype(np.float32)},
            {"input": rng.standard_normal((batch, 3, 32, 32)).astype(np.float32)})


def _encoder_layer():
    model = bert_encoder(seq=SEQ, hidden=32, layers=1, heads=2, intermediate=64, pooler=False, symbolic=False)
    feeds = [bert_feeds(seq=SEQ, seed=i) for i in range(4)]
    return model, {k: np.stack([f[k] for f in feeds]) for k in feeds[0]}, bert_feeds(seq=SEQ, seed=9)


EXPECTED_KERNELS = {"encoder_layer": ("VdlaMatMul", "VdlaDense"), "yolo_neck": ("VdlaConv", "VdlaUpsample")}
CASES = {"small_cnn": lambda: _images(small_cnn, 2), "vdla_cnn": lambda: _images(vdla_cnn, 1),
         "encoder_layer": _encoder_layer, "yolo_neck": lambda: _images(yolo_neck, 1)}


@pytest.mark.parametrize("case", list(CASES))
def test_a_model_on_the_rtl_equals_the_simulator(case):
    model, calib, feed = CASES[case]()
    art = compile_model(model, target="vdla", hw_config="pynq", calibration=calib)
    sim = Executor(art)
    want = sim.run(feed)
    assert sim.last_launches, "no accelerator step ran"
    with RtlDevice(sim.device.config) as rtl:
        on_rtl = Executor(art, device=rtl)
        got = on_rtl.run(feed)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name])
        assert on_rtl.last_launches.keys() == sim.last_launches.keys()
        for step, launch in sim.last_launches.items():
            assert on_rtl.last_launches[step].cycles == launch.cycles, step
    kernels = {s.op for s in art.plan.steps if s.kind == "vdla"}
    assert {OPS[op].name for op in EXPECTED_KERNELS.get(case, ())} <= kernels, kernels
    if case == "yolo_neck":     # SiLU on the requantizer's write-back (CTRL's table bit), no ALU chain
        eps = [p["meta"]["epilogue"] for p in art.header["vdla_programs"] if "epilogue" in p["meta"]]
        assert any(e["requantizer"] and e["table"] for e in eps), eps
