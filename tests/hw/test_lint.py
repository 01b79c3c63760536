"""Verilator's -Wall lint of the whole RTL is clean for every config the RTL supports
(the only waivers are in the sources, each with its reason; see vdla_hw/rtl/README.md)."""
import pytest

from vdla.hw import load_config
from vdla.hw.rtl.sim.build import lint
from vdla.hw.rtl_params import check_supported

from .test_random_programs import SMALL


@pytest.mark.parametrize("name", ["pynq", "ultra96", "small"])
def test_verilator_lint_is_clean(name, tmp_path):
    config = load_config(SMALL if name == "small" else name)
    assert lint(config, tmp_path) == []


def test_unsupported_configs_are_refused_with_the_reason():
    wide = load_config({"bus_width_bits": 256})   # 16-byte INP elements on a 32-byte bus
    with pytest.raises(ValueError, match="not a multiple of the bus width"):
        check_supported(wide)


def test_timing_values_below_the_pipeline_are_refused():
    from vdla.hw import Timing
    for key, value, reason in (("gemm_pipeline_depth", 3, "gemm_pipeline_depth"), ("gemm_setup_cycles", 1, "setup"),
                               ("dispatch_delay", 2, "dispatch_delay"), ("acc_raw_min_distance", 1, "forward")):
        doc = load_config("pynq").to_dict()
        doc["timing"] = {**Timing().to_dict(), key: value}
        with pytest.raises(ValueError, match=reason):
            check_supported(load_config(doc))
