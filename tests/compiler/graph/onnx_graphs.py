"""Small ONNX models for the graph tests: a node list in, a checked model out, and the oracles
the passes are compared with (onnxruntime, and the graph reference interpreter)."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def tensor(name: str, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, None if shape is None else list(shape))


def const(name: str, value: np.ndarray):
    return numpy_helper.from_array(np.asarray(value), name)


def onnx_model(nodes, inputs, outputs, inits=(), opset: int = OPSET) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "t", list(inputs), list(outputs), initializer=list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=9)


def ops(graph) -> list[str]:
    return [n.op for n in graph.nodes]


def patterns(graph) -> list[str]:
    """Each node's op, a fused group as its members joined by '+'."""
    return [n.attrs.get("pattern", n.op) for n in graph.nodes]


def onnxruntime_outputs(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    import onnxruntime as ort
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
