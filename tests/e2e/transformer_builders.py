"""Transformer models built with onnx.helper and deterministic random weights (no downloads, no torch).

The node patterns are those torch.onnx.export (opset 17, dynamo=False) writes:
- vit_tiny: torchvision's VisionTransformer, whose nn.MultiheadAttention (batch_first, called with
  need_weights=False) goes through F.multi_head_attention_forward: the packed in-projection is
  unflattened to [N, B, 3, D] and picked apart by Gather, the heads go through
  scaled_dot_product_attention, which the exporter writes with sqrt(1/sqrt(hd)) multiplied
  into both q and k^T (the scale computed from the query's Shape), and the out-projection of
  the [N*B, D] rows is a Gemm. legacy_attention=True writes torch 1.x's form instead.
- bert_encoder: Hugging Face's BertModel: Gather embeddings, the extended attention mask
  (Unsqueeze, Unsqueeze, Cast, 1 - mask, times the float32 minimum), heads by Reshape to
  shape arithmetic on the input's Shape, q k^T / sqrt(hd) + mask, Softmax, and the pooler
  (token 0, Gemm, Tanh); or, with attention="sdpa", the mask expanded to [B, 1, S, S] and
  filled by Where, and the sdpa scaling. Its batch and sequence dims are symbolic by default.
Both write GELU as the opset-17 exporter does: x * (Erf(x / sqrt(2)) + 1) * 0.5.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from model_builders import ModelBuilder

I64 = np.int64


class TransformerBuilder(ModelBuilder):
    def ints(self, values) -> str:
        return self.const("shape", np.array(values, I64))

    def scalar(self, value, dtype=np.float32) -> str:
        return self.const("c", np.array(value, dtype))

    def linear(self, x: str, cin: int, cout: int) -> str:
        """nn.Linear on a rank > 2 input: MatMul with the transposed weight, then Add the bias."""
        w = self.rng.standard_normal((cin, cout)).astype(np.float32) / np.sqrt(cin)
        b = self.rng.standard_normal(cout).astype(np.float32) * 0.02
        return self.node("Add", [self.node("MatMul", [x, self.const("w", w)]), self.const("b", b)])

    def layer_norm(self, x: str, dim: int, eps: float) -> str:
        gamma = self.rng.uniform(0.8, 1.2, dim).astype(np.float32)
        beta = (self.rng.standard_normal(dim) * 0.05).astype(np.float32)
        return self.node("LayerNormalization", [x, self.const("ln_w", gamma), self.const("ln_b", beta)],
                         axis=-1, epsilon=eps)

    def gelu(self, x: str) -> str:
        erf = self.node("Erf", [self.node("Div", [x, self.scalar(1.4142135381698608)])])
        y = self.node("Mul", [x, self.node("Add", [erf, self.scalar(1.0)])])
        return self.node("Mul", [y, self.scalar(0.5)])

    def dim_of(self, shape: str, index: int) -> str:
        """Shape()[index] as a [1] tensor (Gather then Unsqueeze), ready to Concat."""
        d = self.node("Gather", [shape, self.const("i", np.array(index, I64))], axis=0)
        return self.node("Unsqueeze", [d, self.ints([0])])


def _vit_attention(b: TransformerBuilder, x: str, batch: int, tokens: int, dim: int, heads: int,
                   legacy: bool) -> str:
    hd = dim // heads
    x = b.node("Transpose", [x], perm=[1, 0, 2])                      # batch_first -> [N, B, D]
    proj = b.linear(x, dim, 3 * dim)                                  # in_proj: [N, B, 3D]
    if legacy:   # torch 1.x: linear(...).chunk(3, dim=-1)
        q, k, v = b.node("Split", [proj, b.ints([dim] * 3)], n_out=3, axis=-1)
    else:
        proj = b.node("Reshape", [proj, b.ints([tokens, batch, 3, dim])])  # unflatten(-1, (3, D))
        proj = b.node("Unsqueeze", [proj, b.ints([0])])
        proj = b.node("Transpose", [proj], perm=[3, 1, 2, 0, 4])           # transpose(0, -2)
        proj = b.node("Squeeze", [proj, b.ints([3])])                      # [3, N, B, D]
        q, k, v = (b.node("Gather", [proj, b.const("i", np.array(i, I64))], axis=0) for i in range(3))

    def heads_first(t: str) -> str:   # [N, B, D] -> [B * H, N, hd]
        t = b.node("Reshape", [t, b.ints([tokens, batch * heads, hd])])
        return b.node("Transpose", [t], perm=[1, 0, 2])

    q, k, v = heads_first(q), heads_first(k), heads_first(v)
    if legacy:   # torch 1.x _scaled_dot_product_attention: q / sqrt(hd), bmm(q, k^T), softmax, bmm
        q = b.node("Div", [q, b.scalar(np.sqrt(hd))])
        scores = b.node("MatMul", [q, b.node("Transpose", [k], perm=[0, 2, 1])])
        attn = b.node("MatMul", [b.node("Softmax", [scores], axis=-1), v])          # [B * H, N, hd]
        attn = b.node("Transpose", [attn], perm=[1, 0, 2])
    else:        # need_weights=False: views to [B, H, N, hd] for scaled_dot_product_attention
        q, k, v = (b.node("Reshape", [t, b.ints([batch, heads, tokens, hd])]) for t in (q, k, v))
        # its symbolic: scale = 1 / sqrt(q.shape[-1]), and both sides times sqrt(scale)
        last = b.node("Slice", [b.node("Shape", [q]), b.ints([-1]), b.ints([I64(2 ** 63 - 1)])])
        root = b.node("Sqrt", [b.node("Cast", [last], to=TensorProto.FLOAT)])
        scale = b.node("Sqrt", [b.node("Div", [b.scalar(1.0), root])])
        kt = b.node("Transpose", [k], perm=[0, 1, 3, 2])
        scores = b.node("MatMul", [b.node("Mul", [q, scale]), b.node("Mul", [kt, scale])])
        attn = b.node("MatMul", [b.node("Softmax", [scores], axis=-1), v])          # [B, H, N, hd]
        attn = b.node("Transpose", [attn], perm=[2, 0, 1, 3])
    attn = b.node("Reshape", [attn, b.ints([batch * tokens, dim])])
    w = b.rng.standard_normal((dim, dim)).astype(np.float32) / np.sqrt(dim)
    bias = b.rng.standard_normal(dim).astype(np.float32) * 0.02
    attn = b.node("Gemm", [attn, b.const("out_w", w), b.const("out_b", bias)], alpha=1.0, beta=1.0, transB=1)
    attn = b.node("Reshape", [attn, b.ints([tokens, batch, dim])])
    return b.node("Transpose", [attn], perm=[1, 0, 2])


def vit_tiny(batch: int = 1, image: int = 224, patch: int = 16, dim: int = 192, depth: int = 12,
             heads: int = 3, mlp: int = 768, classes: int = 1000, seed: int = 0,
             legacy_attention: bool = False) -> onnx.ModelProto:
    """torchvision's vit_b_16 layout at ViT-Tiny sizes (the defaults). legacy_attention: the
    attention as torch 1.x exported it (Split of the in-projection, q / sqrt(hd), batched
    [B * H, N, hd] MatMuls) instead of torch 2.x's Gather picks and sdpa scaling."""
    b = TransformerBuilder("vit_tiny", seed)
    grid = image // patch
    tokens = grid * grid + 1
    x = b.conv("input", 3, dim, patch, stride=patch, bias=True, pad=0)   # [B, D, g, g]
    x = b.node("Reshape", [x, b.ints([batch, dim, grid * grid])])
    x = b.node("Transpose", [x], perm=[0, 2, 1])                          # [B, N-1, D]
    # class_token.expand(n, -1, -1): the exporter resolves -1 with Equal/Where before Expand
    n = b.dim_of(b.node("Shape", ["input"]), 0)
    sizes = b.node("Concat", [n, b.ints([-1]), b.ints([-1])], axis=0)
    sizes = b.node("Where", [b.node("Equal", [sizes, b.ints([-1, -1, -1])]), b.ints([1, 1, 1]), sizes])
    token = b.const("class_token", (b.rng.standard_normal((1, 1, dim)) * 0.02).astype(np.float32))
    x = b.node("Concat", [b.node("Expand", [token, sizes]), x], axis=1)
    pos = b.const("pos_embedding", (b.rng.standard_normal((1, tokens, dim)) * 0.02).astype(np.float32))
    x = b.node("Add", [x, pos])
    for _ in range(depth):
        y = _vit_attention(b, b.layer_norm(x, dim, 1e-6), batch, tokens, dim, heads, legacy_attention)
        x = b.node("Add", [y, x])
        y = b.linear(b.gelu(b.linear(b.layer_norm(x, dim, 1e-6), dim, mlp)), mlp, dim)
        x = b.node("Add", [x, y])
    x = b.layer_norm(x, dim, 1e-6)
    x = b.node("Gather", [x, b.const("i", np.array(0, I64))], axis=1)      # x[:, 0]
    out = b.gemm(x, dim, classes)
    return b.model("input", (batch, 3, image, image), out, (batch, classes))


def _bert_heads(b: TransformerBuilder, x: str, heads: int, hd: int) -> str:
    """transpose_for_scores: view(x.size()[:-1] + (heads, hd)).permute(0, 2, 1, 3)."""
    shape = b.node("Shape", [x])
    lead = b.node("Slice", [shape, b.ints([0]), b.ints([-1]), b.ints([0])])
    x = b.node("Reshape", [x, b.node("Concat", [lead, b.ints([heads, hd])], axis=0)])
    return b.node("Transpose", [x], perm=[0, 2, 1, 3])


def _bert_layer(b: TransformerBuilder, x: str, mask: str, hidden: int, heads: int, intermediate: int,
                attention: str) -> str:
    hd = hidden // heads
    q, k, v = (_bert_heads(b, b.linear(x, hidden, hidden), heads, hd) for _ in range(3))
    kt = b.node("Transpose", [k], perm=[0, 1, 3, 2])
    if attention == "sdpa":   # BertSdpaSelfAttention: the exporter's sqrt(scale) on both sides
        scale = b.scalar(np.sqrt(1 / np.sqrt(hd)))
        scores = b.node("MatMul", [b.node("Mul", [q, scale]), b.node("Mul", [kt, scale])])
    else:
        scores = b.node("Div", [b.node("MatMul", [q, kt]), b.scalar(np.sqrt(hd))])
    ctx = b.node("MatMul", [b.node("Softmax", [b.node("Add", [scores, mask])], axis=-1), v])
    ctx = b.node("Transpose", [ctx], perm=[0, 2, 1, 3])
    lead = b.node("Slice", [b.node("Shape", [ctx]), b.ints([0]), b.ints([-2]), b.ints([0])])
    ctx = b.node("Reshape", [ctx, b.node("Concat", [lead, b.ints([hidden])], axis=0)])
    x = b.layer_norm(b.node("Add", [b.linear(ctx, hidden, hidden), x]), hidden, 1e-12)
    y = b.linear(b.gelu(b.linear(x, hidden, intermediate)), intermediate, hidden)
    return b.layer_norm(b.node("Add", [y, x]), hidden, 1e-12)


def _eager_mask(b: TransformerBuilder, mask_value: float) -> str:
    """get_extended_attention_mask: mask[:, None, None, :], (1 - mask) * mask_value."""
    mask = b.node("Unsqueeze", [b.node("Unsqueeze", ["attention_mask", b.ints([1])]), b.ints([2])])
    mask = b.node("Sub", [b.scalar(1.0), b.node("Cast", [mask], to=TensorProto.FLOAT)])
    return b.node("Mul", [mask, b.scalar(mask_value)])


def _sdpa_mask(b: TransformerBuilder, batch: str, length: str, mask_value: float) -> str:
    """_prepare_4d_attention_mask_for_sdpa: mask[:, None, None, :].expand(B, 1, S, S), inverted,
    then masked_fill(inverted.bool(), mask_value)."""
    mask = b.node("Unsqueeze", [b.node("Unsqueeze", ["attention_mask", b.ints([1])]), b.ints([2])])
    mask = b.node("Expand", [mask, b.node("Concat", [batch, b.ints([1]), length, length], axis=0)])
    inverted = b.node("Sub", [b.scalar(1.0), b.node("Cast", [mask], to=TensorProto.FLOAT)])
    return b.node("Where", [b.node("Cast", [inverted], to=TensorProto.BOOL), b.scalar(mask_value), inverted])


def bert_encoder(batch: int = 1, seq: int = 32, vocab: int = 1000, hidden: int = 128, layers: int = 2,
                 heads: int = 2, intermediate: int = 512, seed: int = 0, max_positions: int = 512,
                 pooler: bool = True, mask_value: float = float(np.finfo(np.float32).min),
                 attention: str = "eager", symbolic: bool = True) -> onnx.ModelProto:
    """BertModel's export: inputs input_ids and attention_mask, int64 [batch, seq], declared
    with symbolic dims "batch" and "sequence" as exporters' dynamic_axes write them (compile
    with input_shapes), or with `symbolic=False` as [batch, seq]; outputs last_hidden_state
    and, with `pooler`, pooler_output. attention: "eager" (BertSelfAttention) or "sdpa"
    (BertSdpaSelfAttention, newer transformers' default)."""
    if attention not in ("eager", "sdpa"):
        raise ValueError(f"attention {attention!r}: expected 'eager' or 'sdpa'")
    b = TransformerBuilder("bert_encoder", seed)

    def emb(rows: int) -> np.ndarray:
        return (b.rng.standard_normal((rows, hidden)) * 0.5).astype(np.float32)

    ids_shape = b.node("Shape", ["input_ids"])
    length = b.dim_of(ids_shape, 1)
    # position_ids = self.position_ids[:, :seq_length]; token_type_ids from the zero buffer, expanded
    positions = b.node("Slice", [b.const("position_ids", np.arange(max_positions, dtype=I64)[None]),
                                 b.ints([0]), length, b.ints([1])])
    types = b.node("Slice", [b.const("token_type_ids", np.zeros((1, max_positions), I64)),
                             b.ints([0]), length, b.ints([1])])
    types = b.node("Expand", [types, b.node("Concat", [b.dim_of(ids_shape, 0), length], axis=0)])
    x = b.node("Gather", [b.const("word_emb", emb(vocab)), "input_ids"], axis=0)
    x = b.node("Add", [x, b.node("Gather", [b.const("type_emb", emb(2)), types], axis=0)])
    x = b.node("Add", [x, b.node("Gather", [b.const("pos_emb", emb(max_positions)), positions], axis=0)])
    x = b.layer_norm(x, hidden, 1e-12)
    if attention == "sdpa":
        mask = _sdpa_mask(b, b.dim_of(ids_shape, 0), length, mask_value)
    else:
        mask = _eager_mask(b, mask_value)
    for _ in range(layers):
        x = _bert_layer(b, x, mask, hidden, heads, intermediate, attention)
    dims = ["batch", "sequence"] if symbolic else [batch, seq]
    outputs = [helper.make_tensor_value_info(x, TensorProto.FLOAT, dims + [hidden])]
    if pooler:
        first = b.node("Gather", [x, b.const("i", np.array(0, I64))], axis=1)
        pooled = b.node("Tanh", [b.gemm(first, hidden, hidden)])
        outputs.append(helper.make_tensor_value_info(pooled, TensorProto.FLOAT, [dims[0], hidden]))
    inputs = [helper.make_tensor_value_info(name, TensorProto.INT64, dims)
              for name in ("input_ids", "attention_mask")]
    graph = helper.make_graph(b.nodes, b.name, inputs, outputs, initializer=b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", b.opset)], ir_version=9)
    onnx.checker.check_model(model)
    return model


def bert_feeds(batch: int = 1, seq: int = 32, vocab: int = 1000, seed: int = 0) -> dict:
    """Token ids and a padding mask: row r pads its last (r + 1) / batch half of the sequence."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, vocab, (batch, seq), dtype=I64)
    mask = np.ones((batch, seq), I64)
    for row in range(batch):
        mask[row, seq - (seq // 2) * (row + 1) // batch:] = 0
    return {"input_ids": ids, "attention_mask": mask}
