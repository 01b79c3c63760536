"""The graph optimization pipeline, top to bottom. Each step is a named Graph -> Graph pass;
`verify` checks the IR invariants after every step (cheap: one walk)."""
from __future__ import annotations

import time

from . import passes
from .ir import Graph, verify

PIPELINE = (
    ("fold_constants", passes.fold_constants),          # shape arithmetic, constant subgraphs
    ("absorb_constant_operands", passes.absorb_constant_operands),
    ("remove_identities", passes.remove_identities),
    ("fold_batch_norm", passes.fold_batch_norm),
    ("canonicalize_gemm", passes.canonicalize_gemm),   # dense form: B [N, K], alpha/beta folded
    ("eliminate_dead_code", passes.eliminate_dead_code),
    ("infer_types", passes.infer_types),
    ("einsum_as_matmul", passes.einsum_as_matmul),     # a batched matrix product written as Einsum
    ("transposes_as_views", passes.transposes_as_views),  # moving only size-1 axes: a Reshape
    ("split_recurrent_projection", passes.split_recurrent_projection),  # all steps' x W^T in one matmul
    ("conv_transpose_as_conv", passes.conv_transpose_as_conv),  # one conv over the output phases
    ("trim_dead_conv_taps", passes.trim_dead_conv_taps),   # kernel rows that read only padding
    ("group_norms_as_layer_norm", passes.group_norms_as_layer_norm),  # statistics by LayerNormalization's kernel
    ("flatten_matmul_rows", passes.flatten_matmul_rows),  # a linear layer: one GEMM, weight in panels
    ("fold_swish", passes.fold_swish),                 # x * Sigmoid(x): one op, fused into its conv
    # after flatten_matmul_rows, whose chain (the bias) it thus ends: fused into fc1's GEMM, ViT-Tiny's
    # GELUs took 9.73 ms with their matmuls against 9.57 apart (the erf in the register tile's epilogue)
    ("fold_gelu", passes.fold_gelu),                   # x * 0.5 * (1 + Erf(x / sqrt 2)): one Gelu
    ("pack_conv_layout", passes.pack_conv_layout),     # NCHWc: a channel block per vector
    ("pointwise_convs_as_rows", passes.pointwise_convs_as_rows),  # 1x1 NCHWc: small images as one row
    ("pointwise_convs_as_matmul", passes.pointwise_convs_as_matmul),  # 1x1 left NCHW: W @ pixels
    ("pack_quantized_matmul", passes.pack_quantized_matmul),  # QLinearMatMul -> uint8 x int8 panels
    ("pack_quantized_conv", passes.pack_quantized_conv),  # QLinearConv -> uint8 x int8 NCHWc
    ("eliminate_dead_code_after_layout", passes.eliminate_dead_code),
    ("fuse_operators", passes.fuse_operators),
    ("plan_memory", passes.plan_memory),
)

# the passes that put tensors and weights in the CPU kernels' forms (layout=False: not these)
_CPU_LAYOUT = ("einsum_as_matmul", "transposes_as_views", "split_recurrent_projection", "conv_transpose_as_conv",
               "group_norms_as_layer_norm", "flatten_matmul_rows", "fold_swish", "fold_gelu", "pack_conv_layout",
               "pointwise_convs_as_rows", "pointwise_convs_as_matmul", "pack_quantized_matmul", "pack_quantized_conv")


def optimize(graph: Graph, stop_after: str | None = None, fuse: bool = True,
             layout: bool = True) -> Graph:
    """Run the pipeline on a copy of `graph`; the per-pass times go to meta["pass_log"]."""
    names = [name for name, _ in PIPELINE]
    if stop_after is not None and stop_after not in names:
        raise ValueError(f"optimize(stop_after={stop_after!r}): no such pass; the passes are {', '.join(names)}")
    graph = graph.copy()
    log = []
    for name, fn in PIPELINE:
        if (name == "fuse_operators" and not fuse) or (name in _CPU_LAYOUT and not layout):
            continue
        start = time.perf_counter()
        graph = fn(graph)
        verify(graph)
        log.append((name, round(time.perf_counter() - start, 6), len(graph.nodes)))
        if name == stop_after:
            break
    graph.meta["pass_log"] = log
    return graph
