"""The graph IR: typed tensors, nodes with ONNX-like operators, and fused groups.

A `Graph` is a list of `Node`s in topological order. Every tensor is named; its static type
(shape and numpy dtype name) lives in `Graph.types` and its value, if it is a parameter or a
folded constant, in `Graph.constants`. Operators keep ONNX names and meanings with their
attributes normalized by the frontend (see frontend/onnx_import.py), so the ONNX spec is the
documentation of each op. One op is ours: "Fused", a node whose `attrs["body"]` is a list of
nodes computed as one kernel (its inputs and outputs are the body's external tensors).
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field

import numpy as np

from vdla.hw.errors import ModelError


# What a value is besides a tensor: ONNX's sequence (a list of tensors) and optional (a tensor,
# or a sequence, or nothing); their `shape` and `dtype` are those of the tensors inside.
VALUE_KINDS = ("tensor", "sequence", "optional")


@dataclass(frozen=True)
class TensorType:
    shape: tuple[int, ...]
    dtype: str  # numpy dtype name: float32, int8, uint8, int32, int64, bool
    kind: str = "tensor"

    @property
    def size(self) -> int:
        return math.prod(self.shape)  # Python ints: a 2^31 x 2^31 shape must not wrap around

    @property
    def dynamic(self) -> bool:
        """Whether a dimension is known only at run time (-1): NonZero's count, a Loop's trips.
        Such a tensor lives outside the memory plan: the host step that makes it allocates it;
        so do sequences and optionals."""
        return self.kind != "tensor" or any(d < 0 for d in self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize

    def __str__(self) -> str:
        text = f"{self.dtype}[{','.join('?' if d < 0 else str(d) for d in self.shape)}]"
        return text if self.kind == "tensor" else f"{self.kind}<{text}>"

    @staticmethod
    def of(array: np.ndarray) -> "TensorType":
        return TensorType(tuple(int(d) for d in array.shape), array.dtype.name)


@dataclass
class Node:
    op: str
    name: str
    inputs: list[str]   # "" marks an absent optional input
    outputs: list[str]
    attrs: dict = field(default_factory=dict)

    @property
    def body(self) -> list["Node"]:
        return self.attrs.get("body", [])

    def describe(self) -> str:
        return f"node {self.name!r} ({self.op})"

    @property
    def host_only(self) -> str | None:
        """Why the node must run on the host (a run-time shape), if it must."""
        return self.attrs.get("host_only")


@dataclass
class Graph:
    name: str
    inputs: list[str]
    outputs: list[str]
    nodes: list[Node]
    types: dict[str, TensorType] = field(default_factory=dict)
    constants: dict[str, np.ndarray] = field(default_factory=dict)
    opset: int = 0
    meta: dict = field(default_factory=dict)  # results of analyses (memory plan, pass log)

    def copy(self) -> "Graph":
        return Graph(self.name, list(self.inputs), list(self.outputs), copy.deepcopy(self.nodes),
                     dict(self.types), dict(self.constants), self.opset, copy.deepcopy(self.meta))

    def add_tensor(self, stem: str, t: TensorType) -> str:
        """Type a new tensor and return its name: `stem`, primed until no tensor has it, so that
        a rewritten tensor keeps its origin readable."""
        name = stem
        while name in self.types:
            name += "'"
        self.types[name] = t
        return name

    def add_constant(self, stem: str, value: np.ndarray) -> str:
        name = self.add_tensor(stem, TensorType.of(value))
        self.constants[name] = value
        return name

    def producers(self) -> dict[str, Node]:
        return {out: node for node in self.nodes for out in node.outputs if out}

    def consumers(self) -> dict[str, list[Node]]:
        users: dict[str, list[Node]] = {}
        for node in self.nodes:
            for name in node.inputs:
                if name:
                    users.setdefault(name, []).append(node)
        return users

    def expand_nodes(self, rewrite) -> "Graph":
        """Each node replaced, in place in the order, by the nodes `rewrite(node)` returns (None:
        the node stays): how a pass lowers one op into several."""
        nodes: list[Node] = []
        for node in self.nodes:
            new = rewrite(node)
            nodes.extend([node] if new is None else new)
        self.nodes = nodes
        return self

    def fold_chains(self, match) -> "Graph":
        """Each node for which `match(node)` gives (replacement, absorbed nodes) replaced by the
        replacement, the absorbed ones (the chain's inner nodes) dropped: how a pass folds a
        pattern of several ops into one."""
        gone: set[int] = set()
        nodes: list[Node] = []
        for node in self.nodes:
            found = None if id(node) in gone else match(node)
            if found is not None:
                node, absorbed = found
                gone.update(id(n) for n in absorbed)
            nodes.append(node)
        self.nodes = [n for n in nodes if id(n) not in gone]
        return self

    def is_constant(self, name: str) -> bool:
        return name in self.constants

    def activations(self) -> list[str]:
        """Tensors that need a runtime buffer: graph inputs and every node output."""
        seen = [n for n in self.inputs if n not in self.constants]
        for node in self.nodes:
            seen.extend(o for o in node.outputs if o)
        return seen

    def summary(self) -> str:
        lines = [f"graph {self.name}: {len(self.nodes)} nodes, {len(self.constants)} constants"]
        for node in self.nodes:
            ins = ", ".join(i or "-" for i in node.inputs)
            outs = ", ".join(f"{o}:{self.types.get(o, '?')}" for o in node.outputs)
            inner = f" [{' -> '.join(n.op for n in node.body)}]" if node.body else ""
            lines.append(f"  {node.name}: {node.op}{inner}({ins}) -> {outs}")
        return "\n".join(lines)


class GraphError(ModelError, ValueError):
    """A graph that breaks an IR invariant or cannot be compiled; the message names the node."""


class UnsupportedModelError(GraphError):
    """A valid model that uses something vdla does not implement (op, attribute value, dtype)."""


class RuntimeShapeError(UnsupportedModelError):
    """A node whose output types depend on values known only at run time (an operand that is no
    compile-time constant, NonZero of an activation, control flow) or whose input shapes do: no
    kernel can take it, but a host step can (fold_constants makes it one where ONNX's shape
    inference types its outputs)."""


class InvalidModelError(GraphError):
    """A model the ONNX definition forbids (onnxruntime rejects it too): an attribute value, an
    operand or a tensor that does not fit; the message names the node or tensor and what was
    expected."""


def verify(graph: Graph) -> None:
    """Check the IR invariants every pass must keep: single definition, defined-before-use,
    a static type for every tensor, outputs produced."""
    defined = set(graph.inputs) | set(graph.constants)
    for name in defined:
        if name not in graph.types:
            raise GraphError(f"graph {graph.name!r}: tensor {name!r} has no type")
    for node in graph.nodes:
        for name in node.inputs:
            if name and name not in defined:
                raise GraphError(f"{node.describe()}: input {name!r} is used before it is defined")
        for name in node.outputs:
            if not name:
                continue
            if name in defined:
                raise GraphError(f"{node.describe()}: output {name!r} is defined twice")
            if name not in graph.types:
                raise GraphError(f"{node.describe()}: output {name!r} has no type")
            defined.add(name)
    for name in graph.outputs:
        if name not in defined:
            raise GraphError(f"graph {graph.name!r}: output {name!r} is never produced")
