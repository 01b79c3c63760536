"""A small float CNN with a CPU kernel of every float kind whose schedule has knobs: a 3x3 conv
the layout pass runs as Winograd, a strided direct conv, a grouped conv (NCHW), a depthwise
conv, a pointwise conv and a dense layer."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

IMAGE = 16     # its 3x3 conv runs by Winograd F(2x2) at 16x16 (layout.winograd_tile), directly at 12x12


def cpu_knob_model(seed: int = 0, dilated_grouped: bool = False):
    """dilated_grouped: the grouped conv in groups of 16 channels and dilated, which keeps it off
    the accelerator (its groups fit the accelerator's blocks otherwise); else in groups of 4,
    which the CPU runs by its NCHW conv kernel."""
    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def weight(name, shape, scale=0.2):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def conv(x, y, shape, **attrs):
        nodes.append(helper.make_node("Conv", [x, weight(f"w_{y}", shape), weight(f"b_{y}", shape[:1], 0.1)], [y],
                                      name=y, **attrs))
        nodes.append(helper.make_node("Relu", [y], [f"{y}_relu"], name=f"{y}_relu"))
        return f"{y}_relu"

    x = conv("x", "winograd", (32, 32, 3, 3), pads=[1, 1, 1, 1])
    x = conv(x, "strided", (32, 32, 3, 3), pads=[1, 1, 1, 1], strides=[2, 2])
    if dilated_grouped:
        x = conv(x, "grouped", (32, 16, 3, 3), pads=[2, 2, 2, 2], group=2, dilations=[2, 2])
    else:   # groups of 4 channels, too narrow for a packed block: the NCHW conv kernel
        x = conv(x, "grouped", (32, 4, 3, 3), pads=[1, 1, 1, 1], group=8)
    x = conv(x, "depthwise", (32, 1, 3, 3), pads=[1, 1, 1, 1], group=32)
    x = conv(x, "pointwise", (64, 32, 1, 1))
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pooled"], name="pool"))
    nodes.append(helper.make_node("Flatten", ["pooled"], ["flat"], name="flatten"))
    nodes.append(helper.make_node("Gemm", ["flat", weight("w_fc", (10, 64)), weight("b_fc", (10,))], ["y"],
                                  name="fc", transB=1))
    graph = helper.make_graph(nodes, "cpu_knobs",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 32, IMAGE, IMAGE))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 10))], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
