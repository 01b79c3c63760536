"""VdlaMul (vdla.compiler.vdla.ops.mul): a squeeze-excitation block's gate (GlobalAveragePool, two
1x1 convs, a sigmoid) times its feature map, and a same-shape gated unit, run on the accelerator,
bit for bit their numpy semantics and close to onnxruntime; the Muls it does not take stay on the
CPU with their reasons."""
import numpy as np
import pytest

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.vdla import OPS, place_nodes
from vdla.hw import load_config

from .op_oracle import check_offloaded, model, node, weights
from ...graph.onnx_graphs import const


def _se_block(rng):
    nodes = [node("Conv", ["x", "w"], ["f"], name="conv", pads=[1, 1, 1, 1]), node("Relu", ["f"], ["r"], name="relu"),
             node("GlobalAveragePool", ["r"], ["s"], name="gap"),
             node("Conv", ["s", "w1"], ["s1"], name="fc1"), node("Relu", ["s1"], ["s2"], name="fc1_relu"),
             node("Conv", ["s2", "w2"], ["s3"], name="fc2"), node("Sigmoid", ["s3"], ["gate"], name="sigmoid"),
             node("Mul", ["r", "gate"], ["y"], name="excite")]
    return model(nodes, (1, 16, 8, 8), (1, 32, 8, 8),
                 [const("w", weights(rng, (32, 16, 3, 3))), const("w1", weights(rng, (32, 32, 1, 1), 0.5)),
                  const("w2", weights(rng, (32, 32, 1, 1), 0.5))])


def test_a_squeeze_excitation_gate_multiplies_on_the_accelerator(rng):
    place = check_offloaded(_se_block(rng), OPS["VdlaMul"].name, ["excite"], rng)
    assert all(place[n]["device"] == "vdla" for n in ("conv", "gap", "fc1", "fc2")), place


def test_a_same_shape_gated_unit_multiplies_on_the_accelerator(rng):
    nodes = [node("Conv", ["x", "wa"], ["a"], name="conv_a", pads=[1, 1, 1, 1]),
             node("Conv", ["x", "wb"], ["b"], name="conv_b", pads=[1, 1, 1, 1]),
             node("Mul", ["a", "b"], ["y"], name="gated")]
    m = model(nodes, (1, 16, 6, 6), (1, 32, 6, 6),
              [const("wa", weights(rng, (32, 16, 3, 3))), const("wb", weights(rng, (32, 16, 3, 3)))])
    check_offloaded(m, OPS["VdlaMul"].name, ["gated"], rng)


def _placed(nodes, inits, vta_compat=False):
    m = model(nodes, (1, 16, 6, 6), (1, 16, 6, 6), inits)
    g = optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
    return place_nodes(g, load_config("pynq"), vta_compat=vta_compat)


def test_muls_it_does_not_take_stay_on_the_cpu_with_their_reasons(rng):
    conv = node("Conv", ["x", "w"], ["a"], name="conv", pads=[1, 1, 1, 1])
    w = const("w", weights(rng, (16, 16, 3, 3)))
    place = _placed([conv, node("Mul", ["a", "k"], ["y"], name="mul")], [w, const("k", weights(rng, (1, 16, 6, 6)))])
    assert place["mul"]["device"] == "cpu" and "Mul by a constant" in place["mul"]["reason"]
    place = _placed([conv, node("Mul", ["a", "x"], ["y"], name="mul")], [w])
    assert place["mul"]["device"] == "cpu" and "a tensor the CPU computed" in place["mul"]["reason"]
    rows = [conv, node("ReduceMean", ["a"], ["r"], name="mean", axes=[3], keepdims=1),
            node("Mul", ["a", "r"], ["y"], name="mul")]
    place = _placed(rows, [w])
    assert place["mul"]["device"] == "cpu" and "one value per channel" in place["mul"]["reason"]
    conv2 = node("Conv", ["x", "w"], ["b"], name="conv2", pads=[1, 1, 1, 1])
    place = _placed([conv, conv2, node("Mul", ["a", "b"], ["y"], name="mul")], [w], vta_compat=True)
    assert place["mul"]["device"] == "cpu" and "VTA has no ALU MUL" in place["mul"]["reason"]
