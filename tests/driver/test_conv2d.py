"""3x3 convolution layers through the runtime on the simulator device, bit-exact against numpy."""
import numpy as np
import pytest

from vdla.driver.programs import (Requant, conv2d_reference, pack_activation, pack_conv_weight,
                                  run_conv2d, unpack_activation)
from vdla.driver.runtime import CommandQueue
from vdla.hw import MemType, Opcode


def _int8(rng, *shape):
    return rng.integers(-128, 128, shape, dtype=np.int8)


@pytest.mark.parametrize("virtual_threads", [1, 2])
def test_conv3x3_pad1_with_dma_padding(device, rng, virtual_threads):
    x, w = _int8(rng, 1, 32, 14, 14), _int8(rng, 32, 32, 3, 3)
    req = Requant(shift=9)
    cq = CommandQueue(device)
    y, result = run_conv2d(device, x, w, pad=1, virtual_threads=virtual_threads, tile_h=4,
                           requant=req, cq=cq)
    np.testing.assert_array_equal(y, conv2d_reference(x, w, pad=1, requant=req))
    # the border is zero-filled by the DMA: no padded copy of the input exists in DRAM and
    # the first/last row tiles ask the LOAD for a zero row above/below the image
    inp_loads = [i for i in cq.last_stream if i.opcode == Opcode.LOAD and i.memory_type == MemType.INP and i.x_size]
    assert all(i.x_pad_0 == 1 and i.x_pad_1 == 1 for i in inp_loads)
    assert [i.y_pad_0 for i in inp_loads[:2]] == [1, 1] and [i.y_pad_1 for i in inp_loads[-2:]] == [1, 1]
    assert result.stats["load_bytes"]["INP"] < 2 * x.nbytes


def test_conv_ragged_channels_batch_stride_and_last_tile(device, rng):
    """Channels that are not multiples of 16 (zero-padded layout), two images, stride 2 and
    a last row tile shorter than the others."""
    x, w = _int8(rng, 2, 20, 11, 9), _int8(rng, 24, 20, 3, 3)
    y, _ = run_conv2d(device, x, w, stride=2, pad=1, virtual_threads=2, tile_h=4)
    np.testing.assert_array_equal(y, conv2d_reference(x, w, stride=2, pad=1))


def test_conv_5x5_pad2_requant_with_mul(device, rng):
    x, w = _int8(rng, 1, 16, 8, 8), _int8(rng, 16, 16, 5, 5)
    req = Requant(mul=3, shift=11, lo=0, hi=127)   # ReLU-style clip
    y, _ = run_conv2d(device, x, w, pad=2, virtual_threads=1, requant=req)
    np.testing.assert_array_equal(y, conv2d_reference(x, w, pad=2, requant=req))


def test_layouts_round_trip_and_match_spec(rng):
    x = _int8(rng, 3, 20, 5, 6)
    packed = pack_activation(x, 2, 16)
    assert packed.shape == (2, 2, 5, 6, 2, 16)
    # SPEC §7: element (n/B, c/BLOCK, h, w) holds lanes [n%B][c%BLOCK]
    assert packed[1, 1, 4, 5, 0, 3] == x[2, 19, 4, 5]
    assert packed[1, 1, 4, 5, 1, 3] == 0          # zero-padded batch row 3
    np.testing.assert_array_equal(unpack_activation(packed, 3, 20), x)
    w = _int8(rng, 17, 20, 3, 3)
    pw = pack_conv_weight(w, 16)
    assert pw.shape == (2, 2, 3, 3, 16, 16)
    assert pw[1, 1, 2, 0, 0, 3] == w[16, 19, 2, 0]   # [out lane][in lane]


@pytest.mark.parametrize("virtual_threads", [1, 2])
def test_conv_output_channel_tiles_reuse_weights(device, rng, virtual_threads):
    """80 output channels in tiles of 2 blocks (2, 2, 1): weights of each channel tile are
    loaded once per image and alternate between two weight slots with two threads."""
    x, w = _int8(rng, 2, 64, 7, 7), _int8(rng, 80, 64, 3, 3)
    req = Requant(shift=10)
    cq = CommandQueue(device)
    y, result = run_conv2d(device, x, w, virtual_threads=virtual_threads, tile_h=3, tile_oc=2,
                           requant=req, cq=cq)
    np.testing.assert_array_equal(y, conv2d_reference(x, w, requant=req))
    wgt_loads = [i for i in cq.last_stream if i.opcode == Opcode.LOAD and i.memory_type == MemType.WGT]
    assert len(wgt_loads) == 2 * 3                      # per image, per channel tile
    assert result.stats["load_bytes"]["WGT"] == 2 * 5 * 4 * 9 * 256


def test_resnet18_deep_layer_picks_channel_tiles(device, rng):
    """256 -> 256 channels, 14x14: the weights (2304 elements) exceed the weight SRAM, so the
    program tiles output channels on its own."""
    x, w = _int8(rng, 1, 256, 14, 14), _int8(rng, 256, 256, 3, 3)
    req = Requant(shift=12)
    y, _ = run_conv2d(device, x, w, virtual_threads=2, requant=req)
    np.testing.assert_array_equal(y, conv2d_reference(x, w, requant=req))
