"""The float graph the placement, ranges and quantization tests share: what the accelerator
takes and what it refuses, typed and unfused as placement sees it."""
import numpy as np
from onnx import helper

from vdla.compiler.frontend import import_onnx
from vdla.compiler.graph import optimize

from ..graph.onnx_graphs import const, onnx_model, tensor


def placed_model(rng):
    """conv+relu -> dilated conv -> residual add+relu -> max pool -> global average -> flatten ->
    dense -> softmax, and an Add of a constant: what the accelerator takes and what it refuses."""
    def w(shape):
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)
    n = helper.make_node
    nodes = [n("Conv", ["x", "w1"], ["c1"], name="conv", pads=[1, 1, 1, 1]), n("Relu", ["c1"], ["r1"], name="relu"),
             n("Conv", ["r1", "w2"], ["c2"], name="dilated", pads=[2, 2, 2, 2], dilations=[2, 2]),
             n("Add", ["c2", "r1"], ["a"], name="residual"), n("Relu", ["a"], ["r2"], name="relu2"),
             n("MaxPool", ["r2"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             n("Add", ["p", "k"], ["pk"], name="add_constant"),
             n("GlobalAveragePool", ["pk"], ["g"], name="gap"), n("Flatten", ["g"], ["f"], name="flatten"),
             n("Gemm", ["f", "w3"], ["d"], name="dense", transB=1), n("Softmax", ["d"], ["y"], name="softmax")]
    m = onnx_model(nodes, [tensor("x", (1, 16, 8, 8))], [tensor("y", (1, 32))],
                   [const("w1", w((16, 16, 3, 3))), const("w2", w((16, 16, 3, 3))), const("w3", w((32, 16))),
                    const("k", np.float32(0.5))])
    return optimize(import_onnx(m), stop_after="infer_types", fuse=False, layout=False)
