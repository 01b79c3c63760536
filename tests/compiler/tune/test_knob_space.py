"""The knob spaces topi.vdla.plan exposes to the tuner: every point fits and compiles to the
default's output, the default is still the cost model's choice among its own candidates,
the ranking spreads over structures, and neighbours stay in the space."""
import numpy as np
import pytest

from vdla.compiler.vdla import KernelSpec
from vdla.compiler.topi.vdla import ConvKnobs, ConvLayer, DenseKnobs, DenseLayer, Epilogue
from vdla.compiler.topi.vdla.plan import (conv_cost, conv_knob_problem, conv_knob_space, conv_steps,
                                          default_conv_knobs, default_dense_knobs, dense_cost, dense_knob_problem,
                                          dense_knob_space)
from vdla.compiler.tune import TuningError
from vdla.compiler.tune.measure import measure
from vdla.compiler.tune.search import KernelSearch
from vdla.compiler.tune.signature import kernel_signature
from vdla.compiler.tune.space import MAX_COST_RATIO, MAX_STEP_RATIO, KnobSpace
from vdla.hw import load_config

CFG = load_config("pynq")
EP = Epilogue(bias=True, shift=9)
LAYER = ConvLayer(1, 2, 32, 32, 2)


def test_every_conv_point_fits_and_the_default_is_the_cheapest_of_its_candidates():
    space = conv_knob_space(CFG, LAYER, EP)
    assert len(space) == len(set(space)) > 1000
    assert all(conv_knob_problem(CFG, LAYER, k, EP) is None for k in space)
    assert {k.vthreads for k in space} == {1, 2, 3, 4} and {k.order for k in space} == {"oc_outer", "pixel_outer"}
    default = default_conv_knobs(CFG, LAYER, EP)
    own = [k for k in space if k.vthreads in (1, 2) and k.order == "oc_outer"]
    assert default in space and conv_cost(CFG, LAYER, default, EP) == min(conv_cost(CFG, LAYER, k, EP) for k in own)


def test_a_row_tile_wholly_below_the_image_is_refused():
    """Two threads over rows round 32 rows up to 44: the last tile of 11 reads no image row,
    which the DMA cannot do (the compiler refused it after the fit check had passed it)."""
    problem = conv_knob_problem(CFG, LAYER, ConvKnobs(1, 11, 16, 0, 2, "h"), EP)
    assert problem and "wholly below the image" in problem


def test_sampled_conv_points_compile_and_compute_the_default_output():
    spec = KernelSpec("VdlaConv", LAYER, EP)
    s = KernelSearch(0, CFG, spec, kernel_signature(spec), "conv", 1)
    reference = measure(s.trial(s.defaults[0]))
    space = conv_knob_space(CFG, LAYER, EP)
    rng = np.random.default_rng(0)
    sample = [space[i] for i in rng.choice(len(space), 12, replace=False)]
    sample += [k for k in space if k.vthreads > 1 and k.vthread_axis == "h" and k.tile_h == 10][:4]
    for k in sample:
        m = measure(s.trial(k))
        assert m.error is None and m.digest == reference.digest, (k, m.error)


def test_dense_space_and_its_refusals():
    layer = DenseLayer(2, 8, 6)
    space = dense_knob_space(CFG, layer)
    assert space and all(dense_knob_problem(CFG, layer, k) is None for k in space)
    own = [k for k in space if k.vthreads in (1, 2)]
    default = default_dense_knobs(CFG, layer)
    assert dense_cost(CFG, layer, default) == min(dense_cost(CFG, layer, k) for k in own)
    assert "tile_n=4 does not divide 6" in dense_knob_problem(CFG, layer, DenseKnobs(1, 4, 0, 1))
    assert "cannot be shared by 4 virtual threads" in dense_knob_problem(CFG, layer, DenseKnobs(1, 3, 0, 4))
    assert "consecutive micro-ops" in dense_knob_problem(CFG, DenseLayer(1, 8, 6), DenseKnobs(1, 1, 0, 1))
    big = DenseLayer(1, 4096, 2)
    assert "input SRAM" in dense_knob_problem(CFG, big, DenseKnobs(1, 2, 0, 1))


def test_model_order_spreads_over_structures_and_neighbours_stay_in_the_space():
    ks = KnobSpace(CFG, KernelSpec("VdlaConv", LAYER, EP))
    order = ks.model_order()
    assert sorted(order, key=repr) == sorted(ks.points, key=repr)
    structures = [(k.tile_oc, k.ic_chunk, k.vthreads, k.vthread_axis, k.order) for k in order]
    first = structures[:len(set(structures))]
    assert len(set(first)) == len(first)        # the best tile of every structure before any second best
    rng = np.random.default_rng(1)
    for k in order[:20]:
        n = ks.neighbour(k, rng)
        assert n is None or (n in ks.members and n != k)


def test_kernels_without_knobs_or_without_a_fitting_schedule():
    with pytest.raises(TuningError, match="VdlaPool kernels have no schedule knobs"):
        KnobSpace(CFG, KernelSpec("VdlaPool", None, Epilogue()))
    tiny = load_config(dict(CFG.to_dict(), LOG_INP_BUFF_SIZE=8))
    with pytest.raises(TuningError, match="no schedule of .* fits"):
        KnobSpace(tiny, KernelSpec("VdlaConv", ConvLayer(1, 1, 16, 16, 1, 7, 7, 1, (3, 3, 3, 3)), EP))


def test_hopeless_and_slow_to_measure_schedules_are_left_out():
    """Measured: estimated within MAX_COST_RATIO of the model's best and with at most
    MAX_STEP_RATIO times the default's tile steps (a trial's wall time grows with them)."""
    layer = ConvLayer(1, 1, 64, 64, 2, 7, 7, 2, (3, 3, 3, 3))
    default = default_conv_knobs(CFG, layer, EP)
    ks = KnobSpace(CFG, KernelSpec("VdlaConv", layer, EP), default=default)
    fitting = conv_knob_space(CFG, layer, EP)
    best = min(conv_cost(CFG, layer, k, EP) for k in fitting)
    assert default in ks.members and 0 < len(ks) < ks.fitting == len(fitting)
    assert all(conv_cost(CFG, layer, k, EP) <= MAX_COST_RATIO * best for k in ks.points)
    assert all(conv_steps(layer, k) <= MAX_STEP_RATIO * conv_steps(layer, default) for k in ks.points)
    two_pixel_tiles = ConvKnobs(1, 2, 1, 0, 1)     # a GEMM setup and a DMA per two pixels
    assert two_pixel_tiles in fitting and two_pixel_tiles not in ks.members
