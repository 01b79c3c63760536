"""Operator tags: how schedule_for recognizes what kind of computation a stage is."""
ELEMWISE = "elemwise"        # out[i] = f(in[i]) (same shape)
BROADCAST = "broadcast"      # numpy broadcasting of several inputs
INJECTIVE = "injective"      # each output element reads inputs at computed indices (reshape, pad..)
CONV2D_NCHW = "conv2d_nchw"
CONV2D_NCHWC = "conv2d_nchwc"
CONV2D_NCHWC_INT8 = "conv2d_nchwc_int8"
DEPTHWISE_NCHWC = "depthwise_conv2d_nchwc"
WINOGRAD_INPUT = "winograd_input"     # the three stages of conv2d_nchwc_winograd
WINOGRAD_GEMM = "winograd_gemm"
WINOGRAD_OUTPUT = "winograd_output"
WINOGRAD_HALF = "winograd_half"
MATMUL_INT8 = "matmul_int8"           # uint8 x int8 panels -> int32 (vpdpbusd)       # a transform along one axis of the tile (the other follows)
DENSE = "dense"
DENSE_PARTIAL = "dense_partial"   # the vector-lane stage of a row-factored dense
MATMUL = "matmul"
POOL = "pool"
SOFTMAX = "softmax"
REDUCE = "reduce"

CHEAP = {ELEMWISE, BROADCAST, INJECTIVE}


def is_injective(tag: str) -> bool:
    return tag in CHEAP
