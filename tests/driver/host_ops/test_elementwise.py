"""Dropout in training mode (vdla.driver.host_ops.elementwise; the inference ops are checked by
the onnx node tests): ratio 0 is the identity with a full mask, as onnxruntime gives; otherwise
each element is kept with probability 1 - ratio and scaled by 1 / (1 - ratio), the mask saying
which, the same draw for the same seed. It runs as a host step."""
import numpy as np
import pytest

from ort_oracle import check_node, node_model, vdla_run
from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize


def _inputs(rng, ratio):
    return {"x": rng.standard_normal((64, 64)).astype(np.float32), "ratio": np.float32(ratio),
            "training_mode": np.array(True)}


def test_ratio_zero_is_the_identity_as_onnxruntime(rng):
    check_node("Dropout", _inputs(rng, 0.0), n_outputs=2, constants={"ratio", "training_mode"})


@pytest.mark.parametrize("ratio", [0.25, 0.75])
def test_a_seeded_draw_keeps_one_minus_ratio_scaled_and_repeats(rng, ratio):
    inputs = _inputs(rng, ratio)
    model = node_model("Dropout", inputs, {"seed": 7}, n_outputs=2, constants={"ratio", "training_mode"})
    feeds = {"x": inputs["x"]}
    y, mask = vdla_run(model, feeds)
    assert mask.dtype == bool and abs(mask.mean() - (1 - ratio)) < 0.03      # 4096 draws
    np.testing.assert_allclose(y, np.where(mask, inputs["x"] / (1 - ratio), 0), rtol=1e-6)
    again, _ = vdla_run(model, feeds, kernels=False)
    np.testing.assert_array_equal(y, again)
    (node,) = optimize(import_onnx(model)).nodes
    assert node.host_only == "Dropout in training mode (a random mask) runs on the host"
