"""Small ONNX models built in code (no downloads), for `vdla demo` and quick experiments."""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def small_residual_cnn(image: int = 32, classes: int = 10, seed: int = 0) -> onnx.ModelProto:
    """conv3x3(3->16)+BN+ReLU, max pool, conv3x3/2(16->32)+BN+ReLU, a residual block of two
    3x3 convs, global average pooling, a fully connected layer and softmax; He-scaled random
    weights (a stand-in for a trained network)."""
    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array, np.float32), name))
        return name

    def conv_bn(x, name, cin, cout, stride=1, relu=True, gamma=1.0):
        w = rng.standard_normal((cout, cin, 3, 3)) * np.sqrt(2.0 / (cin * 9))
        nodes.append(helper.make_node("Conv", [x, const(f"{name}_w", w)], [f"{name}_c"], name=name,
                                      kernel_shape=[3, 3], strides=[stride, stride], pads=[1, 1, 1, 1]))
        params = [rng.uniform(0.5, 1.5, cout) * gamma, rng.standard_normal(cout) * 0.1,
                  rng.standard_normal(cout) * 0.1, rng.uniform(0.5, 1.5, cout)]
        names = [const(f"{name}_bn{k}", p) for k, p in enumerate(params)]
        nodes.append(helper.make_node("BatchNormalization", [f"{name}_c"] + names, [f"{name}_bn"],
                                      name=f"{name}_bn", epsilon=1e-5))
        if not relu:
            return f"{name}_bn"
        nodes.append(helper.make_node("Relu", [f"{name}_bn"], [f"{name}_relu"], name=f"{name}_relu"))
        return f"{name}_relu"

    y = conv_bn("input", "conv1", 3, 16)
    nodes.append(helper.make_node("MaxPool", [y], ["pool1"], name="pool1", kernel_shape=[3, 3], strides=[2, 2],
                                  pads=[1, 1, 1, 1]))
    y = conv_bn("pool1", "conv2", 16, 32, stride=2)
    z = conv_bn(conv_bn(y, "block_a", 32, 32), "block_b", 32, 32, relu=False, gamma=0.5)
    nodes.append(helper.make_node("Add", [z, y], ["block_sum"], name="block_add"))
    nodes.append(helper.make_node("Relu", ["block_sum"], ["block_out"], name="block_relu"))
    nodes.append(helper.make_node("GlobalAveragePool", ["block_out"], ["gap"], name="gap"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["features"], name="flatten", axis=1))
    w = rng.standard_normal((classes, 32)) / np.sqrt(32)
    nodes.append(helper.make_node("Gemm", ["features", const("fc_w", w), const("fc_b", rng.standard_normal(classes) * 0.1)],
                                  ["logits"], name="fc", transB=1))
    nodes.append(helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=-1))
    graph = helper.make_graph(nodes, "small_residual_cnn",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, image, image])],
                              [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [1, classes])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=9)
    onnx.checker.check_model(model)
    return model
