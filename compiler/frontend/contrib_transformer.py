"""onnxruntime's transformer operators, as its transformer optimizer writes them (domain
com.microsoft; SimplifiedLayerNormalization, which onnxruntime registers in the default domain),
expanded at import into default-domain nodes that vdla has records for: the activations into
Gelu / Sigmoid / Add / Mul, the fused norms into Add + LayerNormalization / RMSNormalization,
EmbedLayerNormalization into Gather + Add + LayerNormalization, and the attentions into the
input projection (MatMul, Add, Split) and the default-domain Attention (opset-23 semantics).

onnxruntime masks padding keys by ADDING mask_filter_value (-10000) to their scores, so a row
with every key padding still gets a softmax (a boolean attn_mask would make it zeros): the
expansion builds the same additive bias as a float attn_mask. Future keys (unidirectional) it
leaves out altogether, as is_causal does (aligned after the past keys, as onnxruntime's).

What an expansion needs to know of its operands' shapes (the mask's form, the sequence length)
comes from the types the nodes imported so far give; an operand whose type is not known then is
refused by name."""
from __future__ import annotations

import copy

import numpy as np
from onnx import helper

from ..graph.infer import constant_operands_known, infer_node
from ..graph.ir import Graph, Node, TensorType

# op -> the attributes honoured (a value not implemented is refused in the expansion)
TRANSFORMER_OPS = {
    "Gelu": set(), "BiasGelu": set(), "FastGelu": set(), "QuickGelu": {"alpha"}, "BiasAdd": set(),
    "SkipLayerNormalization": {"epsilon"}, "SkipSimplifiedLayerNormalization": {"epsilon"},
    "SimplifiedLayerNormalization": {"axis", "epsilon", "stash_type"},
    "EmbedLayerNormalization": {"epsilon", "mask_index_type"},
    "Attention": {"num_heads", "scale", "mask_filter_value", "unidirectional", "qkv_hidden_sizes", "do_rotary",
                  "past_present_share_buffer", "rotary_embedding_dim"},
    "MultiHeadAttention": {"num_heads", "scale", "mask_filter_value", "unidirectional"},
    "RotaryEmbedding": {"num_heads", "rotary_embedding_dim", "interleaved", "is_packed_batching", "scale"},
}
# the ones onnxruntime registers in the default ONNX domain rather than com.microsoft
DEFAULT_DOMAIN_OPS = {"SimplifiedLayerNormalization"}
# graph.meta key of the types inferred so far during an import (the frontend drops it at the end)
IMPORT_TYPES = "contrib_import_types"

_EPSILON = 1e-12            # onnxruntime's default for the fused (Skip/Embed) layer norms
_MASK_FILTER = -10000.0


class _Expansion:
    """The nodes (and constants, put in `graph`) standing for one contrib node."""

    def __init__(self, name: str, graph: Graph, fail, attributes):
        self.name, self.graph, self.fail, self.attributes = name, graph, fail, attributes
        self.nodes: list[Node] = []
        self._count = 0

    def _fresh(self, tag: str) -> str:
        self._count += 1
        return f"{self.name}.{tag}_{self._count}"

    def const(self, value, dtype) -> str:
        name = self._fresh("const")
        array = np.asarray(value, dtype=dtype)
        self.graph.constants[name] = array
        self.graph.types[name] = TensorType.of(array)
        return name

    def op(self, op: str, inputs: list[str], outputs: list[str] | int = 1, **attrs):
        """One default-domain node, its attributes completed and checked as the importer does for
        a node of the newest opset; returns its output name (or names, for several)."""
        outs = outputs if isinstance(outputs, list) else [self._fresh(op) for _ in range(outputs)]
        proto = helper.make_node(op, inputs, outs, **attrs)
        self.nodes.append(Node(op, self._fresh(op), list(inputs), list(outs), self.attributes(proto)))
        return outs[0] if len(outs) == 1 else outs

    def type(self, value: str, what: str) -> TensorType:
        """The type of `value`, as far as the nodes before it tell; refuses the node if unknown."""
        if value in self.graph.types:
            return self.graph.types[value]
        # the types of the graph's nodes so far, inferred once per node over the whole import
        known = self.graph.meta.setdefault(IMPORT_TYPES, {"types": {}, "done": 0})
        probe = Graph(self.graph.name, self.graph.inputs, [], [], {**self.graph.types, **known["types"]},
                      self.graph.constants, self.graph.opset)
        _infer(probe, self.graph.nodes[known["done"]:])
        known["types"], known["done"] = probe.types, len(self.graph.nodes)
        probe = Graph(probe.name, probe.inputs, [], [], dict(probe.types), probe.constants, probe.opset)
        _infer(probe, self.nodes)
        if value not in probe.types or probe.types[value].dynamic:
            self.fail(f"the shape of {what} ({value!r}) is not known at import (from the model's inputs and "
                      "constants), which the expansion needs")
        return probe.types[value]


def _infer(probe: Graph, nodes: list[Node]) -> None:
    """The output types of `nodes` into probe.types, where their inputs' types tell them."""
    for node in nodes:
        if any(n and n not in probe.types for n in node.inputs) or not constant_operands_known(probe, node):
            continue
        try:
            types = infer_node(probe, copy.deepcopy(node))
        except Exception:   # noqa: BLE001  (a type it cannot tell stays unknown; compiling tells why)
            continue
        for name, t in zip(node.outputs, types):
            if name:
                probe.types[name] = t


def expand_transformer(op: str, name: str, inputs: list[str], outputs: list[str], attrs: dict, fail,
                       graph: Graph, attributes) -> list[Node]:
    """The default-domain nodes computing onnxruntime transformer op `op`; `attributes(proto)`
    completes and checks a new node's attributes as the importer does (at the newest opset)."""
    x = _Expansion(name, graph, fail, attributes)
    ins = list(inputs) + [""] * (10 - len(inputs))
    outs = list(outputs) + [""] * (4 - len(outputs))
    _EXPANDERS[op](x, ins, outs, attrs)
    return x.nodes


def _add(x: _Expansion, a: str, b: str, out: str = "") -> str:
    return x.op("Add", [a, b], [out] if out else 1)


# -- activations ------------------------------------------------------------------------------------

def _gelu(x, ins, outs, attrs):
    x.op("Gelu", [ins[0]], [outs[0]], approximate="none")


def _bias_gelu(x, ins, outs, attrs):
    x.op("Gelu", [_add(x, ins[0], ins[1])], [outs[0]], approximate="none")


def _fast_gelu(x, ins, outs, attrs):
    # onnxruntime's constants 0.797885 and 0.035677 are sqrt(2/pi) and 0.044715 * sqrt(2/pi)
    # to its printed digits: the tanh form of Gelu
    v = _add(x, ins[0], ins[1]) if ins[1] else ins[0]
    x.op("Gelu", [v], [outs[0]], approximate="tanh")


def _quick_gelu(x, ins, outs, attrs):
    dtype = x.type(ins[0], "X").dtype
    gate = x.op("Sigmoid", [x.op("Mul", [ins[0], x.const(attrs.get("alpha", 1.702), dtype)])])
    x.op("Mul", [ins[0], gate], [outs[0]])


def _bias_add(x, ins, outs, attrs):
    _add(x, _add(x, ins[0], ins[1]), ins[2], outs[0])


# -- normalizations ---------------------------------------------------------------------------------

def _skip_sum(x, ins_sum: list[str], out: str) -> str:
    """input + skip (+ bias), into `out` when the node outputs it."""
    total = _add(x, ins_sum[0], ins_sum[1], "" if ins_sum[2] else out)
    return _add(x, total, ins_sum[2], out) if ins_sum[2] else total


def _inv_rms(x, v: str, axes: list[int], epsilon: float, out: str, what: str) -> None:
    """1 / sqrt(mean(v^2) + epsilon) over `axes`, kept as size-1 axes: the RMS norms' inv_std_var."""
    dtype = x.type(v, what).dtype
    if dtype != "float32":
        x.fail(f"the output inv_std_var is supported for float32 inputs only (the input is {dtype})")
    square = x.op("Mul", [v, v])
    mean = x.op("ReduceMean", [square, x.const(axes, np.int64)], keepdims=1)
    x.op("Reciprocal", [x.op("Sqrt", [_add(x, mean, x.const(epsilon, np.float32))])], [out])


def _skip_layer_norm(x, ins, outs, attrs):
    total = _skip_sum(x, [ins[0], ins[1], ins[4]], outs[3])
    x.op("LayerNormalization", [total, ins[2], ins[3]], outs[:3], axis=-1,
         epsilon=float(attrs.get("epsilon", _EPSILON)))


def _skip_simplified_layer_norm(x, ins, outs, attrs):
    if outs[1]:
        x.fail("the output mean is not supported (the RMS form has no mean)")
    epsilon = float(attrs.get("epsilon", _EPSILON))
    total = _skip_sum(x, [ins[0], ins[1], ins[3]], outs[3])
    x.op("RMSNormalization", [total, ins[2]], [outs[0]], axis=-1, epsilon=epsilon)
    if outs[2]:
        _inv_rms(x, total, [-1], epsilon, outs[2], "input")


def _simplified_layer_norm(x, ins, outs, attrs):
    axis, epsilon = attrs.get("axis", -1), float(attrs.get("epsilon", 1e-5))
    stash = attrs.get("stash_type", 1)
    if stash != 1:
        x.fail(f"stash_type={stash} is not supported; supported: 1 (float32 statistics)")
    x.op("RMSNormalization", [ins[0], ins[1]], [outs[0]], axis=axis, epsilon=epsilon)
    if outs[1]:
        rank = len(x.type(ins[0], "X").shape)
        start = axis + rank if axis < 0 else axis
        _inv_rms(x, ins[0], list(range(start, rank)), epsilon, outs[1], "X")


def _embed_layer_norm(x, ins, outs, attrs):
    ids, segments, words, positions, segment_table, gamma, beta, mask, position_ids = ins[:9]
    if bool(segments) != bool(segment_table):
        x.fail("segment_ids and segment_embedding must be given together")
    if outs[1] and attrs.get("mask_index_type", 1) != 1:
        x.fail(f"mask_index_type={attrs['mask_index_type']} with the output mask_index; supported: 1")
    batch, seq = x.type(ids, "input_ids").shape
    total = x.op("Gather", [words, ids], axis=0)
    if position_ids:
        where = x.op("Gather", [positions, position_ids], axis=0)
    else:           # rows 0..S-1 of the position table, the same for every batch
        rows = x.type(positions, "position_embedding").shape[0]
        if rows < seq:
            x.fail(f"position_embedding has {rows} rows, fewer than the sequence length {seq}")
        where = x.op("Slice", [positions, x.const([0], np.int64), x.const([seq], np.int64), x.const([0], np.int64)])
    total = _add(x, total, where)
    if segments:
        total = _add(x, total, x.op("Gather", [segment_table, segments], axis=0))
    if outs[2]:
        total = x.op("Identity", [total], [outs[2]])
    x.op("LayerNormalization", [total, gamma, beta], [outs[0]], axis=-1,
         epsilon=float(attrs.get("epsilon", _EPSILON)))
    if outs[1]:
        if mask:    # onnxruntime counts the mask's ones per row (not its nonzeros)
            ones = x.op("Equal", [mask, x.const(1, x.type(mask, "mask").dtype)])
            x.op("ReduceSum", [x.op("Cast", [ones], to=6), x.const([1], np.int64)], [outs[1]], keepdims=0)
        else:
            x.op("Identity", [x.const(np.zeros(batch), np.int32)], [outs[1]])



# -- attention --------------------------------------------------------------------------------------

def _mask_bias(x, mask, batch, seq, total, filter_value, dtype) -> str:
    """onnxruntime's mask_index / key_padding_mask as an additive bias of shape (batch, 1, 1 or
    seq, total): 0 where a key is attended, filter_value where it is not."""
    mask_type = x.type(mask, "the mask")
    shape = mask_type.shape
    keys = x.const(np.arange(total)[None, :], mask_type.dtype)

    def column(v):          # (batch,) -> (batch, 1), against each key position
        return x.op("Reshape", [v, x.const([batch, 1], np.int64)])

    # the form is read from the rank (and a 1-D mask's length): a raw mask's sizes are left to
    # the Reshape below to check, as the importer may first see the inputs with placeholder sizes
    if shape == (batch,):                   # right padding: each row's valid length
        allowed, rows = x.op("Less", [keys, column(mask)]), 1
    elif shape == (2 * batch,):             # left padding: exclusive ends, then inclusive starts
        ends = x.op("Slice", [mask, x.const([0], np.int64), x.const([batch], np.int64)])
        starts = x.op("Slice", [mask, x.const([batch], np.int64), x.const([2 * batch], np.int64)])
        allowed = x.op("And", [x.op("Less", [keys, column(ends)]), x.op("Not", [x.op("Less", [keys, column(starts)])])])
        rows = 1
    elif len(shape) in (2, 3):              # raw (batch, total) or (batch, seq, total): attended where > 0
        allowed = x.op("Greater", [mask, x.const(0, mask_type.dtype)])
        rows = 1 if len(shape) == 2 else seq
    else:
        x.fail(f"a mask of shape {list(shape)} is not supported; supported: ({batch}) (valid lengths), "
               f"({2 * batch}) (ends, starts), ({batch}, {total}) and ({batch}, {seq}, {total}) (batch {batch}, "
               f"sequence {seq}, total sequence {total})")
    bias = x.op("Where", [allowed, x.const(0, dtype), x.const(filter_value, dtype)])
    return x.op("Reshape", [bias, x.const([batch, 1, rows, total], np.int64)])


def _scores_bias(x, mask, attention_bias, attrs, batch, seq, total, dtype) -> str:
    """The float attn_mask: the mask's bias and attention_bias."""
    filter_value = float(attrs.get("mask_filter_value", _MASK_FILTER))
    terms = []
    if mask:
        terms.append(_mask_bias(x, mask, batch, seq, total, filter_value, dtype))
    if attention_bias:
        terms.append(attention_bias)
    bias = terms[0] if terms else ""
    for term in terms[1:]:
        bias = _add(x, bias, term)
    return bias


def _attend(x, q, k, v, bias, past_k, past_v, outputs, attrs, heads):
    """The default-domain Attention over 3-D Q (and 3-D or 4-D K, V) with onnxruntime's scale."""
    extra = {"is_causal": int(bool(attrs.get("unidirectional", 0)))}
    if attrs.get("scale"):      # onnxruntime reads 0 (the default) as 1/sqrt(head size)
        extra["scale"] = float(attrs["scale"])
    operands = [q, k, v, bias, past_k, past_v]
    while not operands[-1]:
        operands.pop()
    return x.op("Attention", operands, outputs, q_num_heads=heads, kv_num_heads=heads, **extra)


def _heads(x, attrs) -> int:
    heads = attrs.get("num_heads", 0)
    if heads < 1:
        x.fail("the attribute num_heads is required (a positive count of heads)")
    return heads


def _attention(x, ins, outs, attrs):
    inp, weights, bias, mask, past, attention_bias, past_length = ins[:7]
    heads = _heads(x, attrs)
    for flag in ("do_rotary", "past_present_share_buffer"):
        if attrs.get(flag, 0):
            x.fail(f"{flag}={attrs[flag]} is not supported; supported: 0")
    if past_length:
        x.fail("the input past_sequence_length is not supported (it goes with past_present_share_buffer)")
    shape = x.type(inp, "input").shape
    if len(shape) != 3:
        x.fail(f"input {list(shape)} must be 3-D (batch, sequence, input hidden)")
    batch, seq, _ = shape
    dtype = x.type(inp, "input").dtype
    width = x.type(weights, "weights").shape[-1]
    sizes = list(attrs.get("qkv_hidden_sizes") or [width // 3] * 3)
    if len(sizes) != 3 or sum(sizes) != width or sizes[0] != sizes[1] or any(s % heads for s in sizes):
        x.fail(f"qkv_hidden_sizes {sizes} must be 3 multiples of num_heads {heads}, Q's and K's equal, summing "
               f"to the weights' {width} columns")
    qkv = x.op("MatMul", [inp, weights])
    if bias:
        qkv = _add(x, qkv, bias)
    q, k, v = x.op("Split", [qkv, x.const(sizes, np.int64)], 3, axis=-1)
    past_k = past_v = ""
    past_len = 0
    if past:        # (2, batch, heads, past, head size): key and value caches stacked
        past_len = x.type(past, "past").shape[3]
        halves = x.op("Split", [past, x.const([1, 1], np.int64)], 2, axis=0)
        past_k, past_v = (x.op("Squeeze", [h, x.const([0], np.int64)]) for h in halves)
    scores = _scores_bias(x, mask, attention_bias, attrs, batch, seq, past_len + seq, dtype)
    if not outs[1]:
        _attend(x, q, k, v, scores, past_k, past_v, [outs[0]], attrs, heads)
        return
    present_k, present_v = x._fresh("present_key"), x._fresh("present_value")
    _attend(x, q, k, v, scores, past_k, past_v, [outs[0], present_k, present_v], attrs, heads)
    stacked = [x.op("Unsqueeze", [p, x.const([0], np.int64)]) for p in (present_k, present_v)]
    x.op("Concat", stacked, [outs[1]], axis=0)


def _multi_head_attention(x, ins, outs, attrs):
    query, key, value, bias, mask, attention_bias, past_k, past_v, past_length, cache = ins[:10]
    heads = _heads(x, attrs)
    if past_length or cache:
        x.fail("the inputs past_sequence_length and cache_indirection are not supported (buffer sharing, beam "
               "search)")
    if outs[3]:
        x.fail("the output qk is not supported")
    shape = x.type(query, "query").shape
    if len(shape) != 3:
        x.fail(f"query {list(shape)} must be 3-D (batch, sequence, hidden): packed QKV is not supported")
    if not key or not value:
        x.fail("key and value are required: packed QKV in query is not supported")
    k_shape, v_shape = x.type(key, "key").shape, x.type(value, "value").shape
    if len(k_shape) not in (3, 4) or len(v_shape) != len(k_shape):
        x.fail(f"key {list(k_shape)} and value {list(v_shape)} must both be 3-D (batch, sequence, hidden) or "
               "4-D (batch, heads, sequence, head size): packed KV is not supported")
    batch, seq, hidden = shape
    dtype = x.type(query, "query").dtype
    if len(k_shape) == 4 and (bias or past_k):
        x.fail("bias and past_key / past_value are not supported with a 4-D key and value")
    if bias:
        bq, bk, bv = x.op("Split", [bias, x.const([hidden, k_shape[2], v_shape[2]], np.int64)], 3, axis=0)
        query, key, value = _add(x, query, bq), _add(x, key, bk), _add(x, value, bv)
    past_len = x.type(past_k, "past_key").shape[2] if past_k else 0
    total = past_len + (k_shape[1] if len(k_shape) == 3 else k_shape[2])
    scores = _scores_bias(x, mask, attention_bias, attrs, batch, seq, total, dtype)
    _attend(x, query, key, value, scores, past_k, past_v, outs[:3], attrs, heads)


def _rotary_embedding(x, ins, outs, attrs):
    inp, positions, cos, sin = ins[:4]
    if attrs.get("is_packed_batching", 0):
        x.fail(f"is_packed_batching={attrs['is_packed_batching']} is not supported; supported: 0")
    if attrs.get("scale", 1.0) != 1.0:
        x.fail(f"scale={attrs['scale']} is not supported; supported: 1.0")
    shape = x.type(inp, "input").shape
    if len(shape) not in (3, 4):
        x.fail(f"input {list(shape)} must be 3-D (batch, sequence, hidden) or 4-D (batch, heads, sequence, head size)")
    batch, seq = shape[0], shape[1] if len(shape) == 3 else shape[2]
    heads, rotated = attrs.get("num_heads", 0), attrs.get("rotary_embedding_dim", 0)
    if len(shape) == 3 and not heads:
        if rotated:
            x.fail("rotary_embedding_dim without num_heads is not supported")
        half = x.type(cos, "cos_cache").shape[-1]          # full rotation: head size = 2 * the cache's width
        heads = shape[2] // (2 * half) if half and shape[2] % (2 * half) == 0 else 0
        if not heads:
            x.fail(f"num_heads is not given and the hidden size {shape[2]} is no multiple of twice cos_cache's "
                   f"width {half}")
    p_shape = x.type(positions, "position_ids").shape
    if p_shape == (1,):         # the first position; the rest follow it
        start = x.op("Add", [positions, x.const(np.arange(seq)[None, :], np.int64)])
        positions = x.op("Expand", [start, x.const([batch, seq], np.int64)])
    elif p_shape != (batch, seq):
        x.fail(f"position_ids {list(p_shape)} must have shape [1] or [{batch}, {seq}] (batch, sequence)")
    extra = {"num_heads": heads} if len(shape) == 3 else {}
    x.op("RotaryEmbedding", [inp, cos, sin, positions], [outs[0]], interleaved=attrs.get("interleaved", 0),
         rotary_embedding_dim=rotated, **extra)


_EXPANDERS = {
    "Gelu": _gelu, "BiasGelu": _bias_gelu, "FastGelu": _fast_gelu, "QuickGelu": _quick_gelu, "BiasAdd": _bias_add,
    "SkipLayerNormalization": _skip_layer_norm, "SkipSimplifiedLayerNormalization": _skip_simplified_layer_norm,
    "SimplifiedLayerNormalization": _simplified_layer_norm, "EmbedLayerNormalization": _embed_layer_norm,
    "Attention": _attention, "MultiHeadAttention": _multi_head_attention, "RotaryEmbedding": _rotary_embedding,
}
