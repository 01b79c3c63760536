"""vdla.hw configuration: presets, validation, derived quantities (expected values from SPEC §1)."""
import json

import pytest

from vdla.hw import DEFAULT_PRESET, PRESETS, HwConfig, load_config, require_config
from vdla.hw.errors import ConfigError


def test_default_preset_matches_spec_table():
    c = load_config("pynq")
    assert c.target == "pynq" and c.clock_mhz == 100 and c.bus_width_bits == 64
    assert (c.batch, c.block) == (1, 16)
    assert (c.inp_elem_bytes, c.wgt_elem_bytes, c.acc_elem_bytes, c.out_elem_bytes) == (16, 256, 64, 16)
    assert (c.inp_depth, c.wgt_depth, c.acc_depth, c.out_depth, c.uop_depth) == (2048, 1024, 2048, 2048, 8192)
    assert c.name == "1x16_i8w8a32_15_15_18_17"
    assert c.gemm_macs_per_cycle == 256 and c.peak_gops == pytest.approx(51.2)


@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_loads(preset):
    c = load_config(preset)
    assert c.target == preset
    assert c.to_dict()["TARGET"] == preset
    assert HwConfig.from_dict(c.to_dict()) == c


def test_zynqmp_presets_are_faster_but_same_isa():
    pynq, ultra96 = load_config("pynq"), load_config("ultra96")
    assert (ultra96.clock_mhz, ultra96.bus_width_bits) == (333, 128)
    assert ultra96.hash == pynq.hash  # clock and bus are not part of the ISA instance


@pytest.mark.parametrize("preset", ["kv260", "aup_zu3"])
def test_the_newer_boards_presets_claim_no_clock_without_a_timing_analysis(preset):
    """KV260 and AUP-ZU3 start from the reference clock (vdla.hw.parts.clock_basis) and the Zynq
    UltraScale+ HPC0 port's widest data path, 128 bits."""
    from vdla.hw.parts import clock_basis
    c = load_config(preset)
    assert clock_basis(c.clock_mhz) == "reference" and c.bus_width_bits == 128


def test_hash_changes_with_architecture():
    a = load_config("pynq")
    b = HwConfig.from_dict({**a.to_dict(), "LOG_BATCH": 1})
    assert a.hash != b.hash and a.name != b.name and b.name.startswith("2x16_")
    assert 0 <= a.hash32 < 2**32


def test_user_json_file(tmp_path):
    doc = load_config("pynq").to_dict()
    doc.update(LOG_BLOCK=3, LOG_INP_BUFF_SIZE=14, LOG_WGT_BUFF_SIZE=16, LOG_ACC_BUFF_SIZE=16)
    path = tmp_path / "small.json"
    path.write_text(json.dumps(doc))
    c = load_config(str(path))
    assert c.block == 8 and c.wgt_depth == (1 << 16) // 64


@pytest.mark.parametrize("change, words", [
    ({"LOG_BLOCK": 9}, ["LOG_BLOCK", "out of range 2..6"]),
    ({"LOG_INP_WIDTH": 2}, ["LOG_INP_WIDTH", "allowed: 3"]),
    ({"bus_width_bits": 48}, ["bus_width_bits", "allowed: 32, 64"]),
    ({"LOG_BATCH": "1"}, ["LOG_BATCH", "must be an integer"]),
    ({"LOG_BLOKC": 4}, ["unknown config key 'LOG_BLOKC'", "LOG_BLOCK"]),
    ({"timing": {"dram_latency": 3}}, ["unknown timing parameter 'dram_latency'", "dram_read_latency"]),
    ({"timing": {"cmd_queue_depth": 0}}, ["cmd_queue_depth", "at least 1"]),
])
def test_bad_config_names_key_and_allowed_range(change, words):
    doc = {**load_config("pynq").to_dict(), **change}
    with pytest.raises(ValueError) as err:
        HwConfig.from_dict(doc)
    for w in words:
        assert w in str(err.value)


def test_config_whose_fields_do_not_fit_the_instruction_is_rejected():
    # 2^20-byte ACC and 2^18-byte INP SRAMs: 14-bit indices; the GEMM's high word needs
    # 2*14 (dst) + 2*14 (src) + 2*10 (wgt) = 76 bits > 64
    doc = {**load_config("pynq").to_dict(), "LOG_ACC_BUFF_SIZE": 20, "LOG_INP_BUFF_SIZE": 18}
    with pytest.raises(ValueError, match="GEMM fields need 140 bits but the format has 128"):
        HwConfig.from_dict(doc)
    doc = {**load_config("pynq").to_dict(), "LOG_ACC_BUFF_SIZE": 23}  # 131072 entries
    with pytest.raises(ValueError, match="do not fit the 16-bit sram_base field"):
        HwConfig.from_dict(doc)


def test_no_source_is_refused_not_read_as_the_default_preset():
    with pytest.raises(TypeError, match=r"no hardware config given: pass a preset name \(pynq, ultra96, zcu104, "
                                        r"kv260, aup_zu3\)"):
        load_config(None)
    with pytest.raises(TypeError, match="source"):
        load_config()                                       # no default argument either
    assert load_config(DEFAULT_PRESET).target == "pynq"     # what an API edge passes for its default


def test_load_config_returns_an_hwconfig_as_it_is():
    c = load_config("ultra96")
    assert load_config(c) is c and load_config(c.to_dict()) == c


def test_below_the_edges_only_an_hwconfig_is_accepted():
    c = load_config("pynq")
    assert require_config(c) is c
    for value, shown in ((None, "got None"), ("pynq", "got str 'pynq'"), (c.to_dict(), "got dict {")):
        with pytest.raises(TypeError, match=f"^hw_config must be an HwConfig, {shown}") as err:
            require_config(value, "hw_config")
        assert "vdla.hw.load_config" in str(err.value)


def test_unknown_preset_or_missing_file():
    with pytest.raises(ValueError, match="not a preset"):
        load_config("pynq-z9")


def test_invalid_json_file(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_config(str(path))
    path.write_text("[" * 100_000)                          # past the JSON reader's recursion
    with pytest.raises(ValueError, match="bad.json is not valid JSON: maximum recursion depth"):
        load_config(str(path))


def test_every_timing_parameter_is_bounded_by_what_the_rtl_can_build():
    """A config cannot describe impossible hardware or make one legal instruction crawl
    (acc_raw_min_distance = 10^9 used to make the hazard check of one ALU take 49 s)."""
    from vdla.hw.timing import LIMITS, Timing
    assert set(LIMITS) == set(Timing().to_dict())
    base = load_config("pynq").to_dict()
    for key, (lo, hi, _) in LIMITS.items():
        for bad, word in ((hi + 1, f"at most {hi}"), (10**9, f"at most {hi}"), (lo - 1, f"at least {lo}")):
            with pytest.raises(ValueError) as err:
                HwConfig.from_dict({**base, "timing": {key: bad}})
            assert key in str(err.value) and f"out of range {lo}..{hi}" in str(err.value) and word in str(err.value)
        for good in (lo, hi):
            assert getattr(HwConfig.from_dict({**base, "timing": {key: good}}).timing, key) == good
    with pytest.raises(ValueError, match="'acc_raw_min_distance' = 1000000000 is out of range 0..64"):
        Timing(acc_raw_min_distance=10**9)   # built directly, not only from JSON
    with pytest.raises(ValueError, match="must be an integer"):
        Timing(token_delay=True)


def test_a_config_that_cannot_be_read_is_a_config_error(tmp_path):
    """The CLI exits with the config category's code (4) for each: no such preset or file, not
    JSON, a key out of range, from a file or a dict."""
    from vdla.hw.errors import ConfigError
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    for source in ("nosuchboard", str(bad), {**load_config("pynq").to_dict(), "LOG_BATCH": 99}):
        with pytest.raises(ConfigError):
            load_config(source)


def test_dma_bytes_are_elements_times_their_size_without_padding():
    """A 3-row x 5-element LOAD INP moves 15 input elements (BATCH x BLOCK int8 each), its
    padding none; a micro-op load x_size micro-ops; a STORE OUT int8 elements like INP's."""
    from vdla.hw import MemInsn, MemType, Opcode
    from vdla.hw.timing import dma_bytes
    c = load_config("pynq")
    inp = MemInsn(opcode=Opcode.LOAD, memory_type=MemType.INP, sram_base=0, dram_base=0, y_size=3, x_size=5,
                  x_stride=5, y_pad_0=1, x_pad_1=2)
    assert dma_bytes(c, inp) == 15 * c.inp_elem_bytes == 15 * c.batch * c.block     # int8 lanes
    uop = MemInsn(opcode=Opcode.LOAD, memory_type=MemType.UOP, sram_base=0, dram_base=0, y_size=1, x_size=7, x_stride=7)
    assert dma_bytes(c, uop) == 7 * c.uop_elem_bytes
    out = MemInsn(opcode=Opcode.STORE, memory_type=MemType.OUT, sram_base=0, dram_base=0, y_size=2, x_size=4, x_stride=4)
    assert dma_bytes(c, out) == 8 * c.out_elem_bytes


def test_random_and_mutated_config_files_are_read_or_refused_with_the_file_named(tmp_path):
    import json_fuzz
    json_fuzz.check_reader(lambda p: load_config(str(p)), tmp_path / "cfg.json", load_config("pynq").to_dict(),
                           ConfigError, seed=1)


def test_a_folder_or_a_binary_file_as_config_is_refused_with_its_name(tmp_path):
    with pytest.raises(ConfigError, match=f"{tmp_path}: cannot be read"):
        load_config(str(tmp_path))
    (tmp_path / "b.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ConfigError, match="b.json: cannot be read"):
        load_config(str(tmp_path / "b.json"))
