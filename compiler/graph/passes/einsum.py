"""Pass: a two-operand Einsum that is a batched matrix product as Transpose, Reshape and MatMul
(CPU pipeline).

Why: exporters write attention as Einsum (MaxViT: "BGHID,BGHJD->BGHIJ" and "BGHIJ,BGHJD->BGHID",
44 nodes), which has no kernel and ran as numpy host steps: the model took 1.55x onnxruntime's
time. Each letter of such an equation is a batch letter (in both operands and the output), a
row letter (the first operand and the output), a column letter (the second and the output) or a
contracted one (both operands, not the output). The operands are transposed to [batch, rows,
contracted] and [batch, contracted, columns], rows, columns and contracted letters merged into
one axis each, multiplied by MatMul's kernels, and the result split and transposed back.

Left to the host step: ellipses, an implicit output, a letter repeated within an operand (a
diagonal), a letter in one operand only that the output drops (a sum), a batch letter whose
sizes differ (broadcast), a 0-d result.
"""
from __future__ import annotations

import math

from ..ir import Graph, Node, TensorType


def _letters(graph: Graph, node: Node):
    """(a, b, out) letter strings, or None where the pass does not apply."""
    eq = node.attrs.get("equation", "").replace(" ", "")
    if len(node.inputs) != 2 or "..." in eq or "->" not in eq:
        return None
    lhs, out = eq.split("->")
    ops = lhs.split(",")
    if len(ops) != 2 or not out:
        return None
    a, b = ops
    types = [graph.types[n] for n in node.inputs]
    if any(len(set(s)) != len(s) for s in (a, b, out)) or [len(a), len(b)] != [len(t.shape) for t in types] \
            or any(t.dtype != "float32" for t in types) or not set(out) <= set(a) | set(b) \
            or (set(a) ^ set(b)) - set(out):
        return None
    size = {}
    for letters, t in zip((a, b), types):
        for c, n in zip(letters, t.shape):
            if size.setdefault(c, n) != n:
                return None
    return a, b, out, size


def _rewrite(graph: Graph, node: Node) -> list[Node] | None:
    found = _letters(graph, node)
    if found is None:
        return None
    a, b, out, size = found
    batch = [c for c in out if c in a and c in b]
    rows = [c for c in out if c in a and c not in b]
    cols = [c for c in out if c in b and c not in a]
    inner = [c for c in a if c in b and c not in out]
    nodes: list[Node] = []
    y = node.outputs[0]

    def step(op, x, shape, stem, attrs):
        t = graph.add_tensor(f"{y}.{stem}", TensorType(tuple(shape), "float32"))
        nodes.append(Node(op, f"{node.name}.{stem}", [x], [t], attrs))
        return t

    def operand(x, letters, order, merged, stem):
        """x transposed to `order` and reshaped to the batch sizes then the merged groups."""
        perm = [letters.index(c) for c in order]
        if perm != list(range(len(perm))):
            x = step("Transpose", x, [size[c] for c in order], f"{stem}_t", {"perm": perm})
        shape = [size[c] for c in batch] + [math.prod(size[c] for c in group) for group in merged]
        return step("Reshape", x, shape, f"{stem}_m", {"shape": shape})

    lhs = operand(node.inputs[0], a, batch + rows + inner, (rows, inner), "a")
    rhs = operand(node.inputs[1], b, batch + inner + cols, (inner, cols), "b")
    product_shape = [size[c] for c in batch] + [math.prod(size[c] for c in rows), math.prod(size[c] for c in cols)]
    product = graph.add_tensor(f"{y}.product", TensorType(tuple(product_shape), "float32"))
    nodes.append(Node("MatMul", f"{node.name}.product", [lhs, rhs], [product]))
    order = batch + rows + cols
    split = [size[c] for c in order]
    perm = [order.index(c) for c in out]
    if perm == list(range(len(perm))):
        nodes.append(Node("Reshape", node.name, [product], [y], {"shape": split}))
    else:
        split_t = step("Reshape", product, split, "split", {"shape": split})
        nodes.append(Node("Transpose", node.name, [split_t], [y], {"perm": perm}))
    return nodes


def einsum_as_matmul(graph: Graph) -> Graph:
    return graph.expand_nodes(lambda node: _rewrite(graph, node) if node.op == "Einsum" else None)
