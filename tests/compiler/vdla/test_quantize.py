"""Quantization for the accelerator (vdla.compiler.vdla.quantize): the quantized graph, checked
by the reference interpreter, stays close to the float one in both quantization modes."""
import numpy as np
import pytest

from vdla.compiler.graph import run_reference
from vdla.compiler.graph.passes.calibrate import calibrate, evaluate_all
from vdla.compiler.vdla import place_nodes, quantize_vdla
from vdla.compiler.vdla.ranges import tensors_to_calibrate, unclipped_at_exits
from vdla.hw import load_config

from .placed_model import placed_model


@pytest.mark.parametrize("vta_compat", [False, True], ids=["vdla", "vta"])
def test_the_quantized_graph_stays_close_to_the_float_graph(rng, vta_compat):
    g = placed_model(rng)
    config = load_config("pynq")
    place = place_nodes(g, config, vta_compat=vta_compat)
    samples = rng.standard_normal((6, 1, 16, 8, 8)).astype(np.float32)
    stats = calibrate(g, {"x": samples}, tensors_to_calibrate(g, place))
    unclipped_at_exits(g, place, stats)
    q = quantize_vdla(g, place, stats, config, vta_compat=vta_compat)
    assert q.meta["placement"] is place
    vdla_ops = {n.op for n in q.nodes if n.op.startswith("Vdla")}
    assert {"VdlaQuantize", "VdlaDequantize"} <= vdla_ops and len(vdla_ops) > 2
    assert "Conv" in {n.op for n in q.nodes}                       # the dilated one, on the CPU
    x = rng.standard_normal((1, 16, 8, 8)).astype(np.float32)
    want = evaluate_all(g, {"x": x})["d"].astype(np.float64)      # the logits, before the softmax
    got = evaluate_all(q, {"x": x})["d"]                           # dequantized for the CPU's softmax
    np.testing.assert_allclose(run_reference(q, {"x": x})["y"].sum(), 1.0, rtol=1e-5)
    sqnr = 10 * np.log10(np.sum(want ** 2) / np.sum((got - want) ** 2))
    assert sqnr > (20 if vta_compat else 25), sqnr
