"""vdla.hw.depthwise: which configs have DEPTHWISE, and the RTL package's statement of it."""
from vdla.hw import load_config
from vdla.hw.depthwise import TAPS, depthwise_problem, row_writes
from vdla.hw.rtl_params import localparams

SMALL_SRAMS = {"LOG_INP_BUFF_SIZE": 12, "LOG_WGT_BUFF_SIZE": 12, "LOG_ACC_BUFF_SIZE": 12}


def test_a_row_pair_must_hold_both_rows_taps():
    # BLOCK multipliers per row pair hold 2 * TAPS taps from BLOCK 8 on
    for log_block, ok in ((2, False), (3, True), (4, True), (5, True)):
        config = load_config({"LOG_BLOCK": log_block, **SMALL_SRAMS})
        assert (depthwise_problem(config) is None) == ok == (config.block >= 2 * TAPS)
    assert "BLOCK 4" in depthwise_problem(load_config({"LOG_BLOCK": 2, **SMALL_SRAMS}))


def test_the_rtl_package_says_taps_and_whether_the_config_has_it():
    assert localparams(load_config("pynq"))["DEPTHWISE_TAPS"] == TAPS
    assert localparams(load_config("pynq"))["DEPTHWISE_OK"] == 1
    assert localparams(load_config({"LOG_BLOCK": 2, **SMALL_SRAMS}))["DEPTHWISE_OK"] == 0


def test_a_rows_first_micro_ops_only_fill_the_window():
    assert row_writes(TAPS + 2).tolist() == [False] * (TAPS - 1) + [True] * 3
    assert not row_writes(TAPS - 1).any()
