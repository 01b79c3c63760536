"""The CPU schedules' knobs (topi.cpu_knobs): the default knobs are today's schedule, every
setting a search may measure schedules every kernel of ResNet-18 and MobileNetV2, computes what
the default computes, and knobs that do not fit are refused by name."""
import sys
from pathlib import Path

import numpy as np
import pytest

from vdla.compiler import te, topi
from vdla.compiler.schedule.lower import lower_schedule
from vdla.compiler.target import Target
from vdla.compiler.topi.cpu_knobs import (IMAGE_ACCUMULATOR_BYTES, MIN_ACCUMULATORS, DenseKnobs, DepthwiseConvKnobs,
                                          DirectConvKnobs, MatmulKnobs, RegisterFile, WINOGRAD_ROW_GROUP_FILTER_BYTES,
                                          WinogradKnobs, default_knobs, knobs_problem, register_tile, tile_registers)
from vdla.compiler.topi.schedule_cpu import cpu_anchor
from vdla.compiler.kernel_jobs import CompileJob, compile_job, target_parts
from vdla.compiler.tune.cpu_measure import probe_inputs, same_output, zeroed
from vdla.compiler.tune.cpu_space import CpuKnobSpace
from vdla.compiler.tune.cpu_tune_model import cpu_model_kernels

from cpu_models import cpu_knob_model

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "e2e"))
import model_builders  # noqa: E402


@pytest.fixture(scope="module")
def host():
    return Target.host(threads=2)


def _int8_group():
    """An int8 blocked conv with its requantization (QLinearConv's kernel; VNNI where the host has it)."""
    x = te.placeholder((1, 2, 7, 9, 16), "uint8", "x")
    w = te.placeholder((4, 2, 3, 3, 4, 16, 4), "int8", "w")
    y = topi.requantize(topi.conv2d_nchwc_int8(x, w, strides=1, pads=1), 0.02, 0.5, 3, "uint8")
    return [x, w, y], [y]


def _int8_matmul_group():
    """uint8 rows x int8 panels with a per-column requantize (QLinearMatMul's kernel)."""
    a = te.placeholder((21, 32), "uint8", "a")
    w = te.placeholder((3, 8, 16, 4), "int8", "w")
    m = te.placeholder((1, 3, 16), "float32", "m")
    acc = topi.matmul_int8_panels(a, w)
    y = topi.cast(topi.clip(topi.round(topi.multiply(topi.cast(acc, "float32"), m)), 0.0, 255.0), "uint8")
    return [a, w, m, y], [y]


def _matmul_group():
    """A batched float matmul with a bias (attention's q k^T, a transformer's linear layer):
    row and column tails for every register tile."""
    a = te.placeholder((2, 19, 24), "float32", "a")
    b = te.placeholder((2, 24, 37), "float32", "b")
    c = te.placeholder((37,), "float32", "c")
    y = topi.add(topi.matmul(a, b), c)
    return [a, b, c, y], [y]


def _groups():
    groups = [(k.name, k.tensors, k.outputs) for k in cpu_model_kernels(cpu_knob_model())]
    return groups + [("int8 conv", *_int8_group()), ("int8_matmul", *_int8_matmul_group()),
                     ("matmul", *_matmul_group())]


GROUPS = _groups()


def test_the_small_model_has_a_kernel_of_every_kind():
    kinds = {cpu_anchor(outputs)[0] for _, _, outputs in GROUPS}
    assert kinds == {"conv2d_nchwc", "conv2d_nchwc_int8", "depthwise_conv2d_nchwc", "conv2d_nchwc_winograd",
                     "conv2d_nchw", "dense", "matmul", "matmul_int8"}


@pytest.mark.parametrize("name, tensors, outputs", GROUPS, ids=[g[0].split(" ")[0] for g in GROUPS])
def test_default_knobs_schedule_as_no_knobs_do(name, tensors, outputs, host):
    kind, dims = cpu_anchor(outputs)
    plain = lower_schedule(topi.schedule_for(outputs, host), tensors, "k")
    explicit = lower_schedule(topi.schedule_for(outputs, host, default_knobs(kind, dims, RegisterFile.of(host),
                                                                             host.threads)), tensors, "k")
    assert repr(plain) == repr(explicit)


@pytest.mark.parametrize("name, tensors, outputs", GROUPS, ids=[g[0].split(" ")[0] for g in GROUPS])
def test_every_knob_setting_computes_what_the_default_does(name, tensors, outputs, host):
    kind, dims = cpu_anchor(outputs)
    space = CpuKnobSpace(kind, dims, default_knobs(kind, dims, RegisterFile.of(host)))
    inputs = probe_inputs(tensors[:len(tensors) - len(outputs)], 1)
    results = []
    for knobs in space.points:
        kernel = compile_job(CompileJob(tensors, outputs, knobs, target_parts(host), "k"))
        assert not isinstance(kernel, str), f"{name} with {knobs}: {kernel}"
        arrays = inputs + zeroed(outputs)
        kernel.load().run("k", arrays)
        results.append((knobs, arrays[len(inputs):]))
    reference = results[0][1]
    wrong = [knobs for knobs, out in results[1:] if not same_output(out, reference)]
    assert not wrong, f"{name}: {len(wrong)} of {len(results)} settings compute something else, e.g. {wrong[0]}"


@pytest.mark.parametrize("build", [model_builders.resnet18, model_builders.mobilenetv2], ids=["resnet18", "mbv2"])
def test_the_knob_space_schedules_every_kernel_of_the_models(build, host):
    kernels = cpu_model_kernels(build(image=64))
    assert len(kernels) >= 10
    for k in kernels:
        default = default_knobs(k.kind, k.dims, RegisterFile.of(host))
        space = CpuKnobSpace(k.kind, k.dims, default)
        assert space.points[0] == default and len(set(space.points)) == len(space)
        for knobs in space.points:
            assert knobs_problem(k.kind, k.dims, knobs) is None, (k.name, knobs)
            topi.schedule_for(k.outputs, host, knobs)


@pytest.mark.parametrize("knobs, message", [
    (DirectConvKnobs(5, 3), "oc_blocks 3 does not divide the 2 output-channel blocks"),
    (DirectConvKnobs(13, 1), "row_tile 13 exceeds the 12 pixels of a row"),
    (DepthwiseConvKnobs(4), "a conv2d_nchwc kernel takes DirectConvKnobs, got DepthwiseConvKnobs"),
])
def test_knobs_that_do_not_fit_are_refused_naming_the_knob(knobs, message, host):
    x = te.placeholder((1, 2, 12, 12, 16), "float32", "x")
    w = te.placeholder((2, 2, 3, 3, 16, 16), "float32", "w")
    y = topi.conv2d_nchwc(x, w, strides=1, pads=1)
    with pytest.raises(ValueError, match=f"schedule knobs for conv2d_nchwc conv2d_nchwc: {message}"):
        topi.schedule_for([y], host, knobs)


@pytest.mark.parametrize("knobs, message", [
    (MatmulKnobs(20, 1), "row_tile 20 exceeds the 19 rows of a matrix"),
    (MatmulKnobs(10, 3), "a 10 x 3 register tile holds more than 28 accumulators"),
])
def test_matmul_knobs_that_do_not_fit_are_refused(knobs, message, host):
    _, (y,) = _matmul_group()
    with pytest.raises(ValueError, match=f"schedule knobs for matmul matmul: {message}"):
        topi.schedule_for([y], host, knobs)


def test_knob_records_refuse_values_of_the_wrong_kind():
    with pytest.raises(ValueError, match="DirectConvKnobs.row_tile must be a positive integer, got 0"):
        DirectConvKnobs(0)
    with pytest.raises(ValueError, match="WinogradKnobs.whole_image must be true or false"):
        WinogradKnobs(1, 4)
    with pytest.raises(ValueError, match="DenseKnobs.columns must be a positive integer"):
        DenseKnobs(2.0)


def test_knobs_for_a_group_without_a_tunable_anchor_are_refused(host):
    x = te.placeholder((4, 16), "float32", "x")
    with pytest.raises(ValueError, match="no tunable anchor"):
        topi.schedule_for([topi.relu(x)], host, DenseKnobs(2))


@pytest.mark.parametrize("extent, lanes, factor", [(64, 16, 16), (24, 16, 8), (12, 16, 4), (6, 16, None),
                                                   (7, 8, None), (32, 4, 4)])
def test_vector_factor_is_the_widest_halving_of_the_lanes_down_to_4(extent, lanes, factor):
    from vdla.compiler.topi.cpu_knobs import vector_factor
    assert vector_factor(extent, lanes) == factor


# AVX-512 (32 registers of 16 floats), AVX2 (16 of 8, broadcasts in a register), AArch64 NEON (32 of 4),
# 32-bit NEON (16 of 4), and 16 of 8 without the AVX2 broadcast rule
REGISTER_FILES = [RegisterFile(32, 16), RegisterFile(16, 8, True), RegisterFile(32, 4), RegisterFile(16, 4),
                  RegisterFile(16, 8)]


@pytest.mark.parametrize("registers", REGISTER_FILES, ids=lambda r: f"{r.vectors}x{r.lanes}")
@pytest.mark.parametrize("width", [1, 3, 4, 7, 14, 17, 28, 56, 112])
@pytest.mark.parametrize("blocks", [1, 3, 4, 32])
def test_default_tiles_fit_the_registers_and_keep_the_pipeline_busy(registers, width, blocks):
    per = 16 // registers.lanes
    for tails in (True, False):
        t, b = register_tile(width, blocks, 16, registers, tails=tails)
        assert blocks % b == 0 and 1 <= t <= width
        assert tile_registers(t, b, per, broadcast_in_register=registers.broadcast_in_register) <= registers.vectors
        assert tails or width % t == 0
        # where some tile of enough accumulators fits, the default is one of them
        some = any(tile_registers(u, c, per, broadcast_in_register=registers.broadcast_in_register)
                   <= registers.vectors and u * c * per >= MIN_ACCUMULATORS
                   and (tails or width % u == 0)
                   for c in (1, 2, 4) if blocks % c == 0 for u in range(1, min(width, 14) + 1))
        assert not some or t * b * per >= MIN_ACCUMULATORS, (t, b)


def test_the_default_tile_follows_the_register_file():
    """A ResNet layer with 7-pixel rows: AVX-512 shares each input between two blocks (the
    fastest of the tiles measured on a Zen 5), AVX2's 16 registers cannot hold the old 14 x 1
    (28 of them for 16-channel blocks) and take a 4-pixel tile with a tail, 32-bit NEON 2 x 1."""
    assert register_tile(7, 32, 16, RegisterFile(32, 16)) == (7, 2)
    assert register_tile(7, 32, 16, RegisterFile(16, 8)) == (4, 1)
    assert register_tile(7, 32, 16, RegisterFile(16, 8, True)) == (4, 1)
    assert register_tile(7, 32, 16, RegisterFile(16, 4)) == (2, 1)


def test_avx512_direct_convs_and_int8_matmuls_take_at_most_two_blocks():
    """ResNet-18's direct convs on AVX-512 (a 16-channel block per register): tiles of 2 blocks and
    long rows (8 x 2 over 56 pixels, 10 x 2 over the stem's 112), where the fewest loads per FMA
    would take 5 x 4; the int8 (VNNI) conv and matmul alike, with tiles that divide the row; the
    Winograd GEMM keeps choosing among 1, 2 and 4."""
    avx512 = RegisterFile(32, 16)
    conv = {w: default_knobs("conv2d_nchwc", {"out_w": w, "out_blocks": 8, "block": 16}, avx512)
            for w in (112, 56, 28, 14, 7)}
    assert conv == {112: DirectConvKnobs(10, 2), 56: DirectConvKnobs(8, 2), 28: DirectConvKnobs(7, 2),
                    14: DirectConvKnobs(7, 2), 7: DirectConvKnobs(7, 2)}
    assert register_tile(56, 8, 16, avx512) == (5, 4)
    assert default_knobs("conv2d_nchwc_int8", {"out_w": 56, "out_blocks": 8, "block": 16}, avx512) == \
        DirectConvKnobs(8, 2)
    assert default_knobs("matmul_int8", {"out_w": 128, "out_blocks": 192, "block": 16}, avx512) == \
        DirectConvKnobs(8, 2)
    assert default_knobs("conv2d_nchwc_winograd", {"tiles_h": 14, "tiles_w": 14, "out_blocks": 8, "block": 16},
                         avx512).oc_blocks == 4


def test_avx2_keeps_a_register_free_and_long_rows_take_a_tile_with_a_tail():
    """Zen 3 (AVX2): 8-channel blocks over a 56-pixel row no longer fill all 16 registers (14 x 1);
    a 196-pixel row (a 14x14 image as one row) takes 6 x 1 and its 4-pixel tail, a 7-pixel row
    still the tail-free-per-cost 4 x 1 (the tail's cost counts whole in a row that short)."""
    avx2 = RegisterFile(16, 8, True)
    t, b = register_tile(56, 3, 8, avx2)
    assert tile_registers(t, b, 1, broadcast_in_register=True) <= 15 and t < 14
    assert register_tile(196, 6, 16, avx2) == (6, 1)
    assert register_tile(7, 32, 16, avx2) == (4, 1)


def test_a_depthwise_tile_holds_an_input_and_a_weight_per_block_besides_its_accumulators():
    assert tile_registers(14, 1, 1, depthwise=True) == 16
    t, b = register_tile(56, 4, 16, RegisterFile(16, 8), oc_blocks=(1,), depthwise=True)
    assert b == 1 and tile_registers(t, 1, 2, depthwise=True) <= 16 and t * 2 >= MIN_ACCUMULATORS


def test_a_target_names_its_vector_registers():
    assert Target("x86_64-unknown-linux-gnu", "znver5", "+avx2,+avx512f").vector_registers == 32
    assert Target("x86_64-unknown-linux-gnu", "znver3", "+avx2,-avx512f").vector_registers == 16
    assert Target("aarch64-linux-gnu").vector_registers == 32
    assert Target("armv7a-linux-gnueabihf").vector_registers == 16


def test_only_x86_without_avx512_keeps_a_broadcast_in_a_register():
    """AVX-512 FMAs take a broadcast memory operand and NEON multiplies by a lane; AVX2 broadcasts
    into a register first."""
    def of(*target):
        return RegisterFile.of(Target(*target)).broadcast_in_register
    assert of("x86_64-unknown-linux-gnu", "znver3", "+avx2,-avx512f")
    assert not of("x86_64-unknown-linux-gnu", "znver5", "+avx2,+avx512f")
    assert not of("aarch64-linux-gnu") and not of("armv7a-linux-gnueabihf")


@pytest.mark.parametrize("registers", REGISTER_FILES, ids=lambda r: f"{r.vectors}x{r.lanes}")
@pytest.mark.parametrize("rows, columns", [(197, 16), (197, 197), (197, 64), (5, 37), (1, 8), (64, 3)])
def test_the_default_matmul_tile_keeps_registers_free(registers, rows, columns):
    """A quarter of them, or one where a broadcast sits in a register its FMAs use at once."""
    knobs = default_knobs("matmul", {"rows": rows, "columns": columns}, registers)
    assert knobs_problem("matmul", {"rows": rows, "columns": columns}, knobs) is None
    assert knobs.vectors in (1, 2) and knobs.vectors <= -(-columns // registers.lanes)
    live = tile_registers(knobs.row_tile, knobs.vectors, 1, broadcast_in_register=registers.broadcast_in_register)
    assert live <= (registers.vectors - 1 if registers.broadcast_in_register else registers.vectors * 3 // 4)


def test_attention_takes_two_column_vectors_and_a_linear_layer_long_rows():
    """ViT-Tiny on AVX-512: q k^T over 197 keys 7 x 2, a linear layer's 16-column blocks 14 x 1
    (the fastest of the tiles measured on a Zen 5)."""
    avx512 = RegisterFile(32, 16)
    assert default_knobs("matmul", {"rows": 197, "columns": 197}, avx512) == MatmulKnobs(7, 2)
    assert default_knobs("matmul", {"rows": 197, "columns": 16}, avx512) == MatmulKnobs(14, 1)


def test_avx2_matmul_takes_two_column_vectors():
    """ViT-Tiny on AVX2 (Zen 3): a linear layer's 16-column panels and attention's 197 keys both
    6 x 2, 15 of the 16 registers (2-3.6x faster than any tile of one 8-column vector there)."""
    avx2 = RegisterFile(16, 8, True)
    assert default_knobs("matmul", {"rows": 197, "columns": 16}, avx2) == MatmulKnobs(6, 2)
    assert default_knobs("matmul", {"rows": 197, "columns": 197}, avx2) == MatmulKnobs(6, 2)


def test_avx2_int8_kernels_take_one_row_against_most_blocks():
    """AVX2's int8 dot product (no VNNI) works per broadcast row more than per weight load: 1 x 4
    (ViT's 200 padded rows, 48 blocks) or 1 x 2 (6 blocks); AVX-512 keeps the FMA tile rule."""
    avx2 = RegisterFile(16, 8, True)
    assert default_knobs("matmul_int8", {"out_w": 200, "out_blocks": 48, "block": 16}, avx2) == DirectConvKnobs(1, 4)
    assert default_knobs("conv2d_nchwc_int8", {"out_w": 7, "out_blocks": 6, "block": 16}, avx2) == DirectConvKnobs(1, 2)
    assert default_knobs("conv2d_nchwc_int8", {"out_w": 56, "out_blocks": 4, "block": 16}, avx2) == DirectConvKnobs(1, 4)
    avx512 = RegisterFile(32, 16)    # VNNI's one instruction per accumulator: the FMA tile rule's rows
    assert default_knobs("matmul_int8", {"out_w": 200, "out_blocks": 48, "block": 16}, avx512).row_tile > 1


@pytest.mark.parametrize("registers", REGISTER_FILES, ids=lambda r: f"{r.vectors}x{r.lanes}")
@pytest.mark.parametrize("rows", [5, 12, 32, 40, 50, 197])
def test_a_matmul_of_few_row_tiles_takes_a_tile_without_a_tail(registers, rows):
    """The row tiles are the matmul's parallel loop, whose tail keeps its guards in every tile
    unless it is at most 1/8 of the loop: with fewer than 8 tiles the default divides the rows
    (BERT's 32 rows on a Zen 3: 4 x 2 in 0.53 ms, 6 x 2 and its 2-row tail 0.81)."""
    knobs = default_knobs("matmul", {"rows": rows, "columns": 128}, registers)
    assert rows % knobs.row_tile == 0 or rows // knobs.row_tile >= 8, knobs
    if registers == RegisterFile(16, 8, True) and rows == 32:
        assert knobs == MatmulKnobs(4, 2)


def test_a_depthwise_tile_counts_the_inputs_a_kernel_row_spans():
    """With its window (stride, kernel width) a depthwise tile counts its accumulators and the input
    vectors one kernel row of it spans, within DW_SPAN_BUDGET x the registers: on AVX2 (two vectors a
    16-channel block) 4-pixel tiles at stride 1 and 3 at stride 2, the best measured (cpu_knobs'
    comment); 32 registers of 16 lanes keep 14 at stride 1."""
    avx2 = RegisterFile(16, 8, True)
    assert tile_registers(4, 1, 2, depthwise=True, window=(1, 3)) == 8 + 6 * 2
    assert tile_registers(3, 1, 2, depthwise=True, window=(2, 3)) == 6 + 7 * 2
    assert register_tile(56, 9, 16, avx2, oc_blocks=(1,), depthwise=True, window=(1, 3)) == (4, 1)
    assert register_tile(56, 6, 16, avx2, oc_blocks=(1,), depthwise=True, window=(2, 3)) == (3, 1)
    assert register_tile(56, 9, 16, RegisterFile(32, 16), oc_blocks=(1,), depthwise=True, window=(1, 3)) == (14, 1)


def test_avx2_tiles_may_hold_three_blocks_that_share_each_broadcast():
    """24 output channels are three 8-lane blocks: on AVX2 one tile takes all three (3 x 3, 9
    accumulators and 13 registers), so the input is read once instead of once per block; a 32-register
    target takes three in a 1x1 conv only, and one block a tile of a conv with taps."""
    avx2 = RegisterFile(16, 8, True)
    assert default_knobs("conv2d_nchwc", {"out_w": 56, "out_blocks": 3, "block": 8}, avx2) == DirectConvKnobs(3, 3)
    assert tile_registers(3, 3, 1, broadcast_in_register=True) <= avx2.vectors - 1
    avx512 = RegisterFile(32, 16)
    assert default_knobs("conv2d_nchwc", {"out_w": 56, "out_blocks": 3, "block": 8}, avx512) == DirectConvKnobs(7, 3)
    assert tile_registers(7, 3, 1) <= avx512.vectors
    assert default_knobs("conv2d_nchwc", {"out_w": 56, "out_blocks": 3, "block": 8, "taps": 9},
                         avx512).oc_blocks == 1
    assert default_knobs("conv2d_nchwc_int8", {"out_w": 56, "out_blocks": 3, "block": 16}, avx512).oc_blocks == 1


def test_a_dense_default_keeps_enough_accumulators_for_the_fma_latency():
    """Each output column is one accumulator chain: MIN_ACCUMULATORS of them (a divisor of the
    columns) keep the FMA units busy; one chain waited on its own latency (MobileNetV2's 1280 x 1000
    classifier 0.109 ms with 1 column, 0.091 with 5, on the Intel Xeon)."""
    assert default_knobs("dense", {"columns": 1000}).columns == MIN_ACCUMULATORS == 8
    assert default_knobs("dense", {"columns": 1001}).columns == 7
    assert default_knobs("dense", {"columns": 13}).columns == 1


def test_direct_convs_with_taps_and_a_small_image_accumulate_over_it():
    """The default accumulates over the output image where the tile's image (pixels x its blocks x
    16 lanes x 4 bytes) fits IMAGE_ACCUMULATOR_BYTES, the conv has taps and one group, and the
    images leave each thread two: ResNet-18's 3x3 layers at 14x14 (25 KB) and 7x7 with 2 threads,
    not with 8 (16 blocks, 8 images), not at 28x28 (100 KB), not its stem, not a 1x1 conv, not a
    grouped one."""
    avx512 = RegisterFile(32, 16)

    def image(w, taps=9, groups=1, blocks=16, threads=2):
        dims = {"out_w": w, "out_h": w, "out_blocks": blocks, "block": 16, "taps": taps, "groups": groups}
        return default_knobs("conv2d_nchwc", dims, avx512, threads).image_accumulator
    assert 14 * 14 * 2 * 16 * 4 <= IMAGE_ACCUMULATOR_BYTES < 28 * 28 * 2 * 16 * 4
    assert image(14) and image(7) and image(7, blocks=32, threads=8) and not image(14, threads=8)
    assert not image(28) and not image(112, taps=49) and not image(7, taps=1) and not image(7, groups=2)
    int8 = {"out_w": 7, "out_h": 7, "out_blocks": 8, "block": 16, "taps": 9, "groups": 1}
    assert default_knobs("conv2d_nchwc_int8", int8, avx512).image_accumulator is False


def test_an_image_accumulator_is_refused_for_int8_and_must_be_a_bool(host):
    tensors, outputs = _int8_group()
    with pytest.raises(ValueError, match="image_accumulator is a float direct conv's .conv2d_nchwc. knob, not "
                                         "conv2d_nchwc_int8's"):
        topi.schedule_for(outputs, host, DirectConvKnobs(9, 1, image_accumulator=True))
    with pytest.raises(ValueError, match="DirectConvKnobs.image_accumulator must be true or false, got 1"):
        DirectConvKnobs(7, 1, image_accumulator=1)


@pytest.mark.parametrize("stride, width, row_tile, oc_blocks", [(1, 13, 5, 2), (2, 13, 3, 1), (1, 7, 7, 4)])
def test_an_image_accumulating_conv_computes_numpys(stride, width, row_tile, oc_blocks, host, rng):
    """Tiles with a tail, a stride and several blocks, with the bias and ReLU epilogue, against
    numpy's convolution of the unpacked tensors."""
    from vdla.compiler import build
    c, m = 32, 64
    x = te.placeholder((1, c // 16, width, width, 16), "float32", "x")
    w = te.placeholder((m // 16, c // 16, 3, 3, 16, 16), "float32", "w")
    b = te.placeholder((1, m // 16, 1, 1, 16), "float32", "b")
    y = topi.relu(topi.add(topi.conv2d_nchwc(x, w, strides=stride, pads=1), b))
    kernel = build(topi.schedule_for([y], host, DirectConvKnobs(row_tile, oc_blocks, image_accumulator=True)),
                   [x, w, b, y], host, "k").load()
    xa, wa = rng.standard_normal(x.shape).astype(np.float32), rng.standard_normal(w.shape).astype(np.float32)
    ba = rng.standard_normal(b.shape).astype(np.float32)
    ya = np.zeros(y.shape, np.float32)
    kernel.run("k", [xa, wa, ba, ya])
    xs = np.pad(xa.transpose(0, 1, 4, 2, 3).reshape(1, c, width, width), ((0, 0), (0, 0), (1, 1), (1, 1)))
    ws = wa.transpose(0, 5, 1, 4, 2, 3).reshape(m, c, 3, 3)
    out = (width + 2 - 3) // stride + 1
    want = np.zeros((m, out, out))
    for i in range(3):
        for j in range(3):
            patch = xs[0, :, i:i + stride * out:stride, j:j + stride * out:stride]
            want += np.einsum("mc,chw->mhw", ws[:, :, i, j].astype(np.float64), patch)
    want = np.maximum(want + ba.reshape(m)[:, None, None], 0)
    got = ya.transpose(0, 1, 4, 2, 3).reshape(m, out, out)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_winograd_rows_of_tiles_group_per_thread_where_the_filter_leaves_l2():
    """Per row of tiles, each thread's share of the rows is one parallel step where the
    transformed filter exceeds WINOGRAD_ROW_GROUP_FILTER_BYTES: ResNet-18's F(4x4) at 28x28
    with 128 channels (2.4 MB; 7 rows of tiles: 4 a step with 2 threads, all 7 with 1, 1 with 8),
    not at 56x56 with 64 (0.6 MB), and never in the whole-image structure."""
    avx512 = RegisterFile(32, 16)

    def group(tiles, channels, alpha=6, threads=2):
        dims = {"tiles_h": tiles, "tiles_w": tiles, "out_blocks": channels // 16, "block": 16,
                "filter_bytes": alpha * alpha * channels * channels * 4}
        return default_knobs("conv2d_nchwc_winograd", dims, avx512, threads).row_group
    assert 36 * 64 * 64 * 4 <= WINOGRAD_ROW_GROUP_FILTER_BYTES < 36 * 128 * 128 * 4
    assert [group(7, 128, threads=t) for t in (1, 2, 8)] == [7, 4, 1]
    assert group(14, 64) == 1
    assert group(4, 256) == 1       # 16 tiles: the whole image at once


def test_a_winograd_tile_of_a_whole_row_takes_two_rows_where_they_fit_a_step_and_the_registers():
    """ResNet-18's 7-tile rows (28x28 and 14x14): 2 x 7 tiles x 2 blocks, 28 accumulators + 2
    weight vectors + a broadcast in 32 registers; not its 14-tile rows (a 5 x 4 tile), not where
    a step has one row (per-row steps), not in 16 registers."""
    avx512 = RegisterFile(32, 16)

    def knobs(tiles, channels, threads=2, registers=avx512, alpha=6):
        dims = {"tiles_h": tiles, "tiles_w": tiles, "out_blocks": channels // 16, "block": 16,
                "filter_bytes": alpha * alpha * channels * channels * 4}
        return default_knobs("conv2d_nchwc_winograd", dims, registers, threads)
    # tile by tile: accumulators + weight vectors + one broadcast
    assert tile_registers(14, 2, 1, broadcast_in_register=True) == 31
    assert knobs_problem("conv2d_nchwc_winograd", {"tiles_h": 8, "tiles_w": 8, "out_blocks": 2, "block": 16},
                         WinogradKnobs(False, 8, 2, 8, 2)) is not None      # 32 accumulators
    k = knobs(7, 128)
    assert (k.row_tile, k.oc_blocks, k.row_group, k.tile_rows) == (7, 2, 4, 2)
    assert knobs(7, 256, alpha=4).tile_rows == 2
    assert knobs(7, 128, threads=1).tile_rows == 2      # all 7 rows a step
    assert knobs(14, 64).tile_rows == 1                 # 5 x 4 of a 14-tile row
    assert knobs(7, 128, threads=8).tile_rows == 1      # a row a step
    assert knobs(7, 128, registers=RegisterFile(16, 8, True)).tile_rows == 1
    dims = {"tiles_h": 14, "tiles_w": 14, "out_blocks": 4, "block": 16}
    assert knobs_problem("conv2d_nchwc_winograd", dims, WinogradKnobs(False, 7, 2, 7, 2)) is None
    assert knobs_problem("conv2d_nchwc_winograd", dims, WinogradKnobs(False, 5, 4, 7, 2)) == \
        "a register tile of 2 x 5 tiles x 4 blocks holds more than 28 accumulators"


@pytest.mark.parametrize("knobs, message", [
    (WinogradKnobs(True, 2, 1, 2), "row_group groups rows of tiles of the per-row structure, not the whole image's"),
    (WinogradKnobs(False, 2, 1, 4), "row_group 4 exceeds the 3 rows of tiles"),
    (WinogradKnobs(False, 2, 1, 1, 2), r"tile_rows 2 exceeds the 1 rows of tiles a GEMM step has \(row_group\)"),
    (WinogradKnobs(True, 3, 2, 1, 5), r"tile_rows 5 exceeds the 3 rows of tiles a GEMM step has \(the image\)"),
])
def test_winograd_row_groups_that_do_not_fit_are_refused(knobs, message, host):
    x = te.placeholder((1, 2, 6, 6, 16), "float32", "x")
    u = te.placeholder((4, 4, 2, 2, 16, 16), "float32", "u")
    y = topi.conv2d_nchwc_winograd(x, u, pads=1)
    with pytest.raises(ValueError, match=message):
        topi.schedule_for([y], host, knobs)
