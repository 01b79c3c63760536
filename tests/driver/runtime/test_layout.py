"""SPEC §7 DRAM layouts (vdla.driver.runtime.layout): element positions and round trips."""
import numpy as np

from vdla.driver.runtime.layout import (pack_activation, pack_conv_weight, pack_matrix_lhs, pack_matrix_rhs,
                                        unpack_activation, unpack_matrix)


def test_layouts_round_trip_and_match_spec(rng):
    x = rng.integers(-128, 128, (3, 20, 5, 6), dtype=np.int8)
    packed = pack_activation(x, 2, 16)
    assert packed.shape == (2, 2, 5, 6, 2, 16)
    # SPEC §7: element (n/B, c/BLOCK, h, w) holds lanes [n%B][c%BLOCK]
    assert packed[1, 1, 4, 5, 0, 3] == x[2, 19, 4, 5]
    assert packed[1, 1, 4, 5, 1, 3] == 0          # zero-padded batch row 3
    np.testing.assert_array_equal(unpack_activation(packed, 3, 20), x)
    w = rng.integers(-128, 128, (17, 20, 3, 3), dtype=np.int8)
    pw = pack_conv_weight(w, 16)
    assert pw.shape == (2, 2, 3, 3, 16, 16)
    assert pw[1, 1, 2, 0, 0, 3] == w[16, 19, 2, 0]   # [out lane][in lane]


def test_matrices_are_activations_and_transposed_weights(rng):
    a = rng.integers(-128, 128, (5, 40), dtype=np.int8)
    b = rng.integers(-128, 128, (40, 18), dtype=np.int8)
    pa, pb = pack_matrix_lhs(a, 1, 16), pack_matrix_rhs(b, 16)
    assert pa.shape == (5, 3, 1, 16) and pb.shape == (2, 3, 16, 16)
    assert pa[4, 2, 0, 7] == a[4, 39] and pb[1, 2, 1, 7] == b[39, 17]
    assert unpack_matrix(pa.reshape(5, 3, 1, 16), 5, 40).tolist() == a.tolist()
