"""VdlaUpsample (vdla.compiler.vdla.ops.upsample): a conv's output upsampled 2x by a nearest Resize
runs on the accelerator, bit for bit its numpy semantics and close to onnxruntime; the Resizes it
does not take (a non-whole factor, linear mode, VTA mode) stay the host's, each with its reason."""
import numpy as np
import pytest

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.vdla import OPS, place_nodes
from vdla.compiler.vdla.ops.upsample import factors
from vdla.hw import load_config

from .op_oracle import check_offloaded, model, node, weights
from ...graph.onnx_graphs import const


def _conv_resize(rng, scales, out_hw, **resize_attrs):
    nodes = [node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]), node("Relu", ["c"], ["r"], name="relu"),
             node("Resize", ["r", "", "scales"], ["y"], name="resize", **resize_attrs)]
    return model(nodes, (1, 16, 6, 5), (1, 32, *out_hw),
                 [const("w", weights(rng, (32, 16, 3, 3))), const("scales", np.array(scales, np.float32))])


@pytest.mark.parametrize("attrs", [{"mode": "nearest"},
                                   {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
                                    "nearest_mode": "floor"}], ids=["half_pixel", "asymmetric"])
def test_a_2x_nearest_upsampling_runs_on_the_accelerator(rng, attrs):
    m = _conv_resize(rng, [1, 1, 2, 2], (12, 10), **attrs)
    place = check_offloaded(m, OPS["VdlaUpsample"].name, ["resize"], rng)
    assert place["conv"]["device"] == "vdla"


def _placed(m, vta_compat=False):
    g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
    return g, place_nodes(g, load_config("pynq"), vta_compat=vta_compat)["resize"]


def test_resizes_that_are_no_whole_factor_block_copy_stay_on_the_host_with_the_reason(rng):
    g, place = _placed(_conv_resize(rng, [1, 1, 1.5, 2], (9, 10)))
    assert factors(g, next(n for n in g.nodes if n.op == "Resize")) is None
    assert place["device"] == "cpu" and place.get("packed")
    assert "not a whole-factor upsampling" in place["reason"] and "as int8 on the CPU" in place["reason"]
    _, place = _placed(_conv_resize(rng, [1, 1, 2, 2], (12, 10), mode="linear"))
    assert place["device"] == "cpu" and "mode 'linear'" in place["reason"]
    _, place = _placed(_conv_resize(rng, [1, 1, 2, 2], (12, 10)), vta_compat=True)
    assert place["device"] == "cpu" and "VTA has no LOAD ACC_8BIT" in place["reason"]
