"""Two small models that share their first conv (same shape, weights and calibration)."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

IMAGE = 32


def conv_model(second: str, seed: int = 0):
    """input (1, 3, IMAGE, IMAGE) -> conv3x3(3->16)+bias -> ReLU -> `second` -> ReLU, where `second` is
    "stride2" (conv3x3/2 16->32) or "pointwise" (conv1x1 16->32, where the default schedules
    leave the tuner something within a few trials)."""
    rng = np.random.default_rng(seed)
    inits = [numpy_helper.from_array((rng.standard_normal((16, 3, 3, 3)) * 0.3).astype(np.float32), "w1"),
             numpy_helper.from_array((rng.standard_normal(16) * 0.1).astype(np.float32), "b1")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1")]
    rng2 = np.random.default_rng(seed + 1)
    if second == "stride2":
        w2, attrs, out = rng2.standard_normal((32, 16, 3, 3)) * 0.1, dict(pads=[1, 1, 1, 1], strides=[2, 2]), \
            (1, 32, IMAGE // 2, IMAGE // 2)
    else:
        w2, attrs, out = rng2.standard_normal((32, 16, 1, 1)) * 0.3, {}, (1, 32, IMAGE, IMAGE)
    inits.append(numpy_helper.from_array(w2.astype(np.float32), "w2"))
    nodes += [helper.make_node("Conv", ["r1", "w2"], ["c2"], name=f"conv2_{second}", **attrs),
              helper.make_node("Relu", ["c2"], ["y"], name="relu2")]
    graph = helper.make_graph(nodes, f"m_{second}",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, (1, 3, IMAGE, IMAGE))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
