"""MACs of CPU nodes without an accelerator record (vdla.compiler.vdla.macs): what placement
reports for a MatMul of two activations, a ConvTranspose and the recurrent ops, against the
operations' definitions counted by hand."""
import numpy as np
from onnx import helper

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize
from vdla.compiler.vdla import place_nodes
from vdla.hw import load_config

from ..graph.onnx_graphs import const, onnx_model, tensor


def _place(nodes, inputs, outputs, inits):
    g = optimize(import_onnx(onnx_model(nodes, inputs, outputs, inits)), stop_after="infer_types", fuse=False,
                 layout=False)
    return place_nodes(g, load_config("pynq"))


def test_conv_transpose_and_lstm_count_their_macs(rng):
    n = helper.make_node
    place = _place([n("ConvTranspose", ["x", "w"], ["y"], name="up", strides=[2, 2]),
                    n("LSTM", ["s", "wi", "ri"], ["h"], name="lstm", hidden_size=20)],
                   [tensor("x", (1, 8, 5, 5)), tensor("s", (7, 2, 10))],
                   [tensor("y", (1, 4, 11, 11)), tensor("h", (7, 1, 2, 20))],
                   [const("w", rng.standard_normal((8, 4, 3, 3)).astype(np.float32)),
                    const("wi", rng.standard_normal((1, 80, 10)).astype(np.float32)),
                    const("ri", rng.standard_normal((1, 80, 20)).astype(np.float32))])
    assert place["up"]["device"] == "cpu" and place["up"]["macs"] == (8 * 5 * 5) * (4 * 3 * 3)
    # per step and batch row: 4 gates x 20 units, each reading 10 inputs and 20 hidden values
    assert place["lstm"]["macs"] == 7 * 2 * 4 * 20 * (10 + 20)
