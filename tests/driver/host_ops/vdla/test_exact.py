"""int_matmul (vdla.driver.host_ops.vdla.exact): integer products through float64 BLAS equal
Python's exact integer products, for int8 codes in a strided windows view (its trailing axes
contracted together) and for magnitudes whose sums pass 2^53 (which stay on int64)."""
import numpy as np

from vdla.driver.host_ops.vdla.exact import EXACT_BELOW, int_matmul


def _exact(a, b):
    return (a.astype(object).reshape(-1, b.shape[0]) @ b.astype(object)).reshape(-1, b.shape[1])


def test_int8_windows_contracted_over_three_axes_equal_the_exact_product(rng):
    x = rng.integers(-128, 128, (2, 3, 9, 8)).astype(np.int64)
    win = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(2, 3))[:, :, ::2, ::2]   # [n, c, h, w, i, j]
    a = win.transpose(0, 2, 3, 1, 4, 5)                                                     # [n, h, w | c, i, j]
    b = rng.integers(-128, 128, (3 * 3 * 3, 5)).astype(np.int8)
    got = int_matmul(a, b, k_axes=3)
    assert got.dtype == np.int64 and got.shape == (*a.shape[:3], 5)
    np.testing.assert_array_equal(got.reshape(-1, 5), _exact(np.ascontiguousarray(a), b).astype(np.int64))
    np.testing.assert_array_equal(int_matmul(a, b, peak_a=128, k_axes=3), got)


def test_sums_beyond_float64s_integers_stay_exact(rng):
    """|a| |b| K above 2^53: a float64 product would round; the int64 one is exact."""
    a = rng.integers(2 ** 30, 2 ** 31, (3, 8)).astype(np.int64)
    b = rng.integers(2 ** 20, 2 ** 21, (8, 2)).astype(np.int64)
    assert 2 ** 30 * 2 ** 20 * 8 >= EXACT_BELOW
    want = _exact(a, b)
    assert (want.astype(np.float64).astype(object) != want).any()      # float64 would be wrong here
    np.testing.assert_array_equal(int_matmul(a, b).astype(object), want)
