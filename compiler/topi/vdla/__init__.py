"""Operators for the VDLA accelerator: int8 tensor expressions in the SPEC §7 blocked layouts
(conv2d, depthwise conv2d, dense on the GEMM core; max/sum pooling, nearest upsampling and
products of activations on the ALU), their ALU
epilogues, and schedules that place tiles in the accelerator's scopes, tensorize with the
declared intrinsics and bind virtual threads (compiled by build.build_vdla). Each compile_*
takes vta_compat=True for streams VTA's hardware computes the same (vta_mode)."""
from .ops import conv2d, dense, depthwise_conv2d
from .epilogue import Epilogue, apply_epilogue, instruction_epilogue
from .schedule import ConvKnobs, DenseKnobs, schedule_conv2d, schedule_dense
from .plan import (ConvLayer, DenseLayer, NoTilingError, conv_cost, conv_knob_space, conv_steps, conv_tiling_problem,
                   default_conv_choices, default_conv_knobs, default_dense_choices, default_dense_knobs, dense_cost,
                   dense_knob_space, dense_steps, dense_tiling_problem)
from .build import compile_conv2d, compile_dense
from .batched import BatchedDenseLayer, GroupedConvLayer, compile_batched_dense, compile_grouped_conv
from .eltwise import AddLayer, compile_add, default_add_knobs
from .pool import PoolKnobs, PoolLayer, compile_pool2d, default_pool_knobs, pool_tiling_problem
from .run import (pack_bias, pack_depthwise_rows, pack_grouped_weight, run_add, run_conv, run_conv_program, run_dense,
                  run_pool)
from .vta_mode import diagonal_weight, scaled_identity

__all__ = ["conv2d", "dense", "depthwise_conv2d", "Epilogue", "apply_epilogue", "instruction_epilogue", "ConvKnobs",
           "DenseKnobs",
           "schedule_conv2d", "schedule_dense", "ConvLayer", "DenseLayer", "NoTilingError", "conv_tiling_problem",
           "conv_cost", "conv_knob_space", "conv_steps", "dense_cost", "dense_knob_space", "dense_steps",
           "dense_tiling_problem", "pool_tiling_problem", "default_conv_choices", "default_conv_knobs",
           "default_dense_choices", "default_dense_knobs",
           "compile_conv2d", "compile_dense", "BatchedDenseLayer", "compile_batched_dense",
           "GroupedConvLayer", "compile_grouped_conv",
           "pack_bias", "pack_depthwise_rows", "pack_grouped_weight", "run_conv", "run_conv_program", "run_dense",
           "PoolKnobs", "PoolLayer", "compile_pool2d", "default_pool_knobs", "run_pool", "AddLayer", "compile_add",
           "default_add_knobs", "run_add", "diagonal_weight", "scaled_identity"]
