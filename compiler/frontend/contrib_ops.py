"""onnxruntime's quantized contrib operators (domain com.microsoft), as onnxruntime's
QOperator quantizer writes them, expanded at import into the standard form
DequantizeLinear -> float op -> QuantizeLinear that the rest of vdla understands: the CPU
runs them like a QDQ model, and the VDLA pipeline reads their ranges like a QDQ model's.

QLinearAdd(A, As, Azp, B, Bs, Bzp, Cs, Czp); QLinearGlobalAveragePool(X, Xs, Xzp, Ys, Yzp);
QGemm(A, As, Azp, B, Bs, Bzp, [C], [Ys], [Yzp]) (C int32 at scale As * Bs; no Ys: float out);
QLinearSoftmax(X, Xs, Xzp, Ys, Yzp).

The transformer operators (Gelu, SkipLayerNormalization, Attention, ...) are contrib_transformer's."""
from __future__ import annotations

from ..graph.ir import Graph, Node
from .contrib_transformer import DEFAULT_DOMAIN_OPS, TRANSFORMER_OPS, expand_transformer

CONTRIB_DOMAIN = "com.microsoft"
CONTRIB_OPS = {"QLinearAdd": set(), "QLinearGlobalAveragePool": {"channels_last"},
               "QGemm": {"alpha", "transA", "transB"}, "QLinearSoftmax": {"axis", "opset"}, **TRANSFORMER_OPS}
# onnxruntime's ops that it registers in the default ONNX domain, imported like the contrib ones
CONTRIB_DEFAULT_DOMAIN_OPS = DEFAULT_DOMAIN_OPS


def expand_contrib(op: str, name: str, inputs: list[str], outputs: list[str], attrs: dict, fail,
                   graph: Graph | None = None, attributes=None) -> list[Node]:
    """The standard nodes computing contrib op `op`; `fail(what)` raises for what is not covered.
    `graph` (the graph imported so far) takes the constants an expansion makes; `attributes`
    is the importer's attribute check for the standard nodes it makes."""
    if op in TRANSFORMER_OPS:
        return expand_transformer(op, name, inputs, outputs, attrs, fail, graph, attributes)
    inputs = list(inputs) + [""] * 9
    nodes: list[Node] = []

    def dq(x, s, zp, tag, axis=None):
        out = f"{name}.{tag}_float"
        nodes.append(Node("DequantizeLinear", f"{name}.dq_{tag}", [x, s, zp] if zp else [x, s], [out],
                          {} if axis is None else {"axis": axis}))
        return out

    def q(x, s, zp, out):
        nodes.append(Node("QuantizeLinear", f"{name}.q", [x, s, zp] if zp else [x, s], [out], {}))

    if op == "QLinearAdd":
        a = dq(inputs[0], inputs[1], inputs[2], "a")
        b = dq(inputs[3], inputs[4], inputs[5], "b")
        nodes.append(Node("Add", f"{name}.add", [a, b], [f"{name}.sum"], {}))
        q(f"{name}.sum", inputs[6], inputs[7], outputs[0])
    elif op == "QLinearGlobalAveragePool":
        if attrs.get("channels_last", 0):
            fail("channels_last=1 (NHWC) is not supported")
        x = dq(inputs[0], inputs[1], inputs[2], "x")
        nodes.append(Node("GlobalAveragePool", f"{name}.pool", [x], [f"{name}.mean"], {}))
        q(f"{name}.mean", inputs[3], inputs[4], outputs[0])
    elif op == "QGemm":
        trans_b = attrs.get("transB", 0)
        a = dq(inputs[0], inputs[1], inputs[2], "a")
        b = dq(inputs[3], inputs[4], inputs[5], "b", axis=0 if trans_b else 1)
        gemm_in = [a, b]
        if inputs[6]:
            scale = f"{name}.bias_scale"
            nodes.append(Node("Mul", f"{name}.bias_scale", [inputs[1], inputs[4]], [scale], {}))
            gemm_in.append(dq(inputs[6], scale, "", "c", axis=0))
        result = f"{name}.result" if inputs[7] else outputs[0]
        nodes.append(Node("Gemm", f"{name}.gemm", gemm_in, [result],
                          {"alpha": attrs.get("alpha", 1.0), "transA": attrs.get("transA", 0), "transB": trans_b}))
        if inputs[7]:
            q(result, inputs[7], inputs[8], outputs[0])
    elif op == "QLinearSoftmax":
        x = dq(inputs[0], inputs[1], inputs[2], "x")
        nodes.append(Node("Softmax", f"{name}.softmax", [x], [f"{name}.p"], {"axis": attrs.get("axis", -1)}))
        q(f"{name}.p", inputs[3], inputs[4], outputs[0])
    else:
        fail("this com.microsoft operator is not supported; supported: " + ", ".join(sorted(CONTRIB_OPS)))
    return nodes
