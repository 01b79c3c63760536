"""Layers no VDLA schedule fits: the default knob searches raise NoTilingError (a ValueError)
whose reason names the constraint, and the cheap *_tiling_problem checks that placement runs
before lowering agree with the searches."""
import pytest

from vdla.compiler.vdla.lower import KernelSpec, tiling_problem
from vdla.compiler.topi.vdla import (AddLayer, ConvLayer, DenseLayer, Epilogue, NoTilingError, PoolLayer,
                                     conv_tiling_problem, default_add_knobs, default_conv_knobs, default_dense_knobs,
                                     default_pool_knobs, dense_tiling_problem, pool_tiling_problem)
from vdla.hw import HwConfig, load_config

PYNQ = load_config("pynq")
TINY_WEIGHTS = HwConfig.from_dict({**PYNQ.to_dict(), "LOG_WGT_BUFF_SIZE": 9})     # two 16x16 blocks
TINY_ACC = HwConfig.from_dict({**PYNQ.to_dict(), "LOG_ACC_BUFF_SIZE": 8})         # four accumulators
EP = Epilogue(bias=True, shift=8, lo=0)


def test_a_one_pixel_one_block_conv_names_the_accumulator_hazard():
    layer = ConvLayer(1, 1, 3, 3, 1, pads=(0, 0, 0, 0))            # 3x3 valid conv: 1x1 output, 16 channels
    reason = conv_tiling_problem(PYNQ, layer, EP)
    assert "one pixel of one channel block" in reason and "acc_raw_min_distance" in reason
    with pytest.raises(NoTilingError) as info:
        default_conv_knobs(PYNQ, layer, EP)
    assert info.value.reason == reason and isinstance(info.value, ValueError)
    assert str(info.value).startswith(f"no VDLA tiling of {layer} fits {PYNQ.name}: ")


def test_a_conv_too_big_for_the_weight_sram_names_the_sram_and_the_smallest_tile():
    layer = ConvLayer(1, 4, 8, 8, 4)
    reason = conv_tiling_problem(TINY_WEIGHTS, layer, EP)
    assert reason == ("the smallest tile (1x2 pixels of 1 channel block): the tiles need 9 weight SRAM elements "
                      "but there are 2")
    with pytest.raises(NoTilingError, match="weight SRAM"):
        default_conv_knobs(TINY_WEIGHTS, layer, EP)


@pytest.mark.parametrize("layer", [ConvLayer(1, 4, 8, 8, 4), ConvLayer(1, 1, 1, 1, 2, 1, 1, pads=(0, 0, 0, 0)),
                                   ConvLayer(1, 2, 5, 5, 2, depthwise=True), ConvLayer(1, 32, 7, 7, 32, stride=2)],
                         ids=["3x3", "1x1 of one pixel", "depthwise", "big"])
@pytest.mark.parametrize("config", [PYNQ, TINY_WEIGHTS, TINY_ACC], ids=["pynq", "tiny_wgt", "tiny_acc"])
def test_the_conv_check_agrees_with_the_default_search(layer, config):
    problem = conv_tiling_problem(config, layer, EP)
    try:
        default_conv_knobs(config, layer, EP)
    except NoTilingError as exc:
        assert problem == exc.reason
    else:
        assert problem is None


def test_a_one_block_dense_names_the_hazard_and_a_big_one_the_sram():
    assert "acc_raw_min_distance" in dense_tiling_problem(PYNQ, DenseLayer(1, 4, 1), EP)
    assert dense_tiling_problem(PYNQ, DenseLayer(1, 32, 4), EP) is None
    reason = dense_tiling_problem(TINY_ACC, DenseLayer(1, 32, 4), EP)
    assert reason.startswith("the smallest tile (1 row block x 2 column blocks): ") and "accumulator" in reason
    with pytest.raises(NoTilingError, match="accumulator"):
        default_dense_knobs(TINY_ACC, DenseLayer(1, 32, 4), EP)


def test_pooling_and_add_too_big_for_the_accumulators():
    pool = PoolLayer(1, 4, 8, 8, 3, 3, 2, (1, 1, 1, 1))
    assert pool_tiling_problem(PYNQ, pool) is None
    reason = pool_tiling_problem(TINY_ACC, pool)
    assert reason == ("the smallest tile (1 pixel of 1 channel block): the tiles need 10 accumulator SRAM elements "
                      "but there are 4")
    with pytest.raises(NoTilingError, match="10 accumulator SRAM elements"):
        default_pool_knobs(TINY_ACC, pool)
    add = AddLayer(1, 4, 8, 8, per_channel=True, offset=True)
    with pytest.raises(NoTilingError, match="one row of 8 pixels of both operands does not fit the 4-element "
                                            "accumulator SRAM"):
        default_add_knobs(TINY_ACC, add)


def test_tiling_problem_dispatches_on_the_kernel_op():
    assert "acc_raw_min_distance" in tiling_problem(PYNQ, KernelSpec("VdlaConv", ConvLayer(1, 1, 3, 3, 1, pads=(0,) * 4),
                                                                      EP))
    assert "accumulator" in tiling_problem(TINY_ACC, KernelSpec("VdlaPool", PoolLayer(1, 1, 4, 4, 2, 2, 2), EP))
    assert "both operands" in tiling_problem(TINY_ACC, KernelSpec("VdlaAdd", AddLayer(1, 1, 8, 8), EP))
    assert tiling_problem(PYNQ, KernelSpec("VdlaAdd", AddLayer(1, 1, 8, 8), EP)) is None


def test_a_window_of_more_taps_than_the_alu_chain_takes_is_refused_by_name():
    """An SE block's global average over 28x28 was a chain of 784 ALU stages that no longer
    lowered (maximum recursion depth exceeded, EfficientNet-B0): now it is untileable, named."""
    from vdla.compiler.topi.vdla.pool import MAX_WINDOW_TAPS, PoolLayer, pool_tiling_problem
    from vdla.hw import load_config
    config = load_config("pynq")
    assert pool_tiling_problem(config, PoolLayer(1, 2, 16, 16, 16, 16, 1, (0, 0, 0, 0), "sum")) is None
    problem = pool_tiling_problem(config, PoolLayer(1, 2, 28, 28, 28, 28, 1, (0, 0, 0, 0), "sum"))
    assert f"a 28x28 window: the ALU sums or compares one tap per stage, at most {MAX_WINDOW_TAPS} taps" in problem
