"""The operator library: one compute function per operator, plus default CPU schedules.

Attributes are keyword arguments with ONNX meanings (pads [top, left, bottom, right], ...).
"""
from .elemwise import (add, subtract, multiply, divide, maximum, minimum, power, where, negative,
                       relu, exp, log, sqrt, tanh, abs, sigmoid, erf, floor, round, clip,
                       leaky_relu, hard_sigmoid, hard_swish, cast, identity, broadcast_shape,
                       reciprocal, equal, less, greater, less_equal, greater_equal, softplus, elu,
                       prelu, gelu, swish, ceil, logical_not, sign, softsign, selu, celu,
                       thresholded_relu, logical, mish)
from .transform import (pad, reshape, flatten, transpose, concat, strided_slice, split,
                        nchw_to_nchwc, nchwc_to_nchw, squeeze, expand_dims, take, broadcast_to, tile,
                        depth_to_space, space_to_depth)
from .conv import (conv2d_nchw, conv2d_nchwc, depthwise_conv2d_nchwc, pack_weight_nchwc,
                   pack_depthwise_weight_nchwc, conv2d_int8,
                   conv2d_nchwc_int8, pack_weight_nchwc_int8, matmul_int8_panels)
from .nn import (dense, matmul, matmul_panels, max_pool2d, avg_pool2d, global_avg_pool2d, global_max_pool2d,
                 softmax, batch_norm_inference)
from .winograd import conv2d_nchwc_winograd
from .reduce import reduce_sum, reduce_mean, reduce_max, reduce_min
from .quant import quantize, dequantize, requantize
from .schedule_cpu import schedule_for, generic_schedule
from . import tags

slice = strided_slice  # noqa: A001 - the contract's name for ONNX Slice
sub, mul, div = subtract, multiply, divide
