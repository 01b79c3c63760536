"""A control-flow op's subgraph (If's branches, Loop's and Scan's body) as the artifact carries it.

The frontend writes a subgraph as a plain document of JSON values, so it travels in a host step's
attributes like any other attribute: {"inputs": [names], "outputs": [names], "nodes": [node
records {op, name, inputs, outputs, attrs}], "constants": {name: array}}. Arrays (constants, and
tensor-valued attributes of its nodes) are tagged with their dtype and shape, because JSON alone
would turn an int32 tensor into Python ints and a float32 one into float64.

The names a subgraph reads from the scopes around it (ONNX lets a body use any outer value) are
not its inputs: the frontend lists them in the op's `captures` attribute and passes them as the
op's last inputs, so a host step's inputs are everything it reads.
"""
from __future__ import annotations

import numpy as np

ARRAY_TAG = "ndarray"
# op -> numpy function: the package's OPS, filled in by vdla.driver.host_ops when it loads
OPS: dict = {}


def encode(value):
    """A value with its arrays tagged (JSON-safe once the arrays' lists are)."""
    if isinstance(value, np.ndarray):
        return {ARRAY_TAG: value.dtype.name, "shape": list(value.shape), "data": value.ravel().tolist()}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    return value


def decode(value):
    """The inverse of `encode`: tagged entries become arrays again."""
    if isinstance(value, dict):
        if ARRAY_TAG in value:
            return np.array(value["data"], dtype=value[ARRAY_TAG]).reshape(value["shape"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def split_captures(inputs: list, attrs: dict) -> tuple[list, dict]:
    """A control-flow op's inputs -> (its declared ONNX inputs, {captured outer name: value})."""
    names = attrs.get("captures", [])
    declared = inputs[:len(inputs) - len(names)] if names else list(inputs)
    return declared, dict(zip(names, inputs[len(declared):]))


class Subgraph:
    """A decoded subgraph, ready to run as often as a loop asks."""

    def __init__(self, doc: dict):
        doc = decode(doc)
        self.inputs: list[str] = doc["inputs"]
        self.outputs: list[str] = doc["outputs"]
        self.nodes: list[dict] = doc["nodes"]
        self.constants: dict = doc["constants"]

    def run(self, captured: dict, feeds: list) -> list:
        """The outputs for `feeds` (one per subgraph input), reading `captured` outer values."""
        if len(feeds) != len(self.inputs):
            raise ValueError(f"the subgraph takes {len(self.inputs)} inputs ({', '.join(self.inputs)}), "
                             f"got {len(feeds)}")
        values = {**captured, **self.constants, **dict(zip(self.inputs, feeds))}
        for node in self.nodes:
            args = [values[n] if n else None for n in node["inputs"]]
            if node["op"] not in OPS:
                raise ValueError(f"subgraph node {node['name']!r}: no host implementation of op {node['op']!r}")
            for name, out in zip(node["outputs"], OPS[node["op"]](args, node["attrs"])):
                if name:
                    values[name] = out
        return [values[n] for n in self.outputs]
