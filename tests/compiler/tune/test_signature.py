"""What records are keyed by: epilogue kinds follow the stages the compiler emits, and the
hardware key covers everything that changes cycle counts but the clock."""
from vdla.compiler.vdla import KernelSpec
from vdla.compiler.topi.vdla import ConvLayer, DenseLayer, Epilogue
from vdla.compiler.tune import epilogue_kind, kernel_signature, tuning_hash
from vdla.hw import load_config

CFG = load_config("pynq")


def test_epilogue_kind_names_the_alu_stages():
    assert epilogue_kind(Epilogue(bias=True, pre_shift=2, scale=True, shift=20)) == \
        ["bias", "preshr", "scale", "shr", "max", "min"]
    assert epilogue_kind(Epilogue(shift=9)) == epilogue_kind(Epilogue(shift=3))     # immediates do not count
    assert epilogue_kind(Epilogue(shift=9, round=True)) == ["round", "shr", "max", "min"]
    assert epilogue_kind(Epilogue(residual=True, lo=0, hi=None)) == ["residual", "max"]
    # VTA mode: a shift past VTA's SHR range is two stages, a multiplier of 1 none
    assert epilogue_kind(Epilogue(shift=20), vta_compat=True) == ["shr", "shr.1", "max", "min"]
    assert epilogue_kind(Epilogue(mul=1, shift=4), vta_compat=True) == ["shr", "max", "min"]


def test_signatures_tell_layers_and_modes_apart():
    conv = KernelSpec("VdlaConv", ConvLayer(1, 2, 8, 8, 2), Epilogue())
    assert kernel_signature(conv) != kernel_signature(conv, vta_compat=True)
    assert kernel_signature(conv)["layer"]["pads"] == [1, 1, 1, 1]
    assert kernel_signature(KernelSpec("VdlaDense", DenseLayer(1, 2, 2), Epilogue()))["op"] == "dense"
    assert kernel_signature(KernelSpec("VdlaPool", None, Epilogue())) is None


def test_the_hardware_key_covers_bus_and_timing_but_not_the_clock():
    base = tuning_hash(CFG)
    doc = CFG.to_dict()
    assert tuning_hash(load_config(dict(doc, clock_mhz=250))) == base
    assert tuning_hash(load_config(dict(doc, bus_width_bits=128))) != base
    assert tuning_hash(load_config(dict(doc, timing=dict(doc["timing"], token_delay=5)))) != base
    assert tuning_hash(load_config(dict(doc, LOG_ACC_BUFF_SIZE=16))) != base
