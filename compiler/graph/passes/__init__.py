"""Graph passes: each is a function Graph -> Graph with a name (the pipeline lists them)."""
from .batch_norm import fold_batch_norm
from .constants import absorb_constant_operands, fold_constants
from .conv_rows import pointwise_convs_as_rows
from .conv_taps import trim_dead_conv_taps
from .conv_transpose import conv_transpose_as_conv
from .dead_code import eliminate_dead_code, remove_identities
from .fusion import fuse_operators
from .einsum import einsum_as_matmul
from .gelu import fold_gelu
from .gemm import canonicalize_gemm
from .group_norm import group_norms_as_layer_norm
from .infer_types import infer_types
from .layout import pack_conv_layout
from .matmul_rows import flatten_matmul_rows
from .memory_plan import plan_memory
from .pointwise_matmul import pointwise_convs_as_matmul
from .quantized_conv import pack_quantized_conv
from .quantized_matmul import pack_quantized_matmul
from .recurrent import split_recurrent_projection
from .swish import fold_swish
from .transpose_views import transposes_as_views

__all__ = ["absorb_constant_operands", "canonicalize_gemm", "conv_transpose_as_conv", "einsum_as_matmul",
           "eliminate_dead_code",
           "flatten_matmul_rows", "fold_batch_norm", "fold_constants", "fold_gelu", "fold_swish", "fuse_operators",
           "group_norms_as_layer_norm", "infer_types", "pack_conv_layout", "pack_quantized_conv",
           "pack_quantized_matmul", "plan_memory", "pointwise_convs_as_matmul", "pointwise_convs_as_rows",
           "remove_identities",
           "split_recurrent_projection", "transposes_as_views", "trim_dead_conv_taps"]
