"""Issue 13's DSE in the test suite's small form: `explore` (the code behind `vdla dse`) over
nine configurations of ResNet-18 (BLOCK 8, 16 and 32, BATCH 2, smaller SRAMs, a 128-bit bus,
two clocks: benchmarks/dse_resnet18.json's points) at 32x32 with 100 classes, every point
compiled and simulated for real.

Synthesis is dse_stubs.fake_synthesize's figures: on this project's 2-core machines Yosys takes
~40 s for the BLOCK 8 RTL, ~90 s for BLOCK 16 and over 4 min for BLOCK 32 (15 min in
benchmarks/dse.py's run), far past a test's share of the suite. test_dse_yosys.py runs `explore`
with real Yosys on the smallest RTL, tests/hw_unit/test_synth_baseline.py synthesizes the
default one, and benchmarks/dse.py gives the real figures of all of these."""
import json

import pytest

from vdla.compiler.compile_model import compile_model
from vdla.compiler.dse import explore
from vdla.compiler.dse.explore import OBJECTIVES
from vdla.compiler.dse.point import sample_inputs, simulate
from vdla.hw import load_config

from dse_stubs import fake_synthesize
from e2e.model_builders import resnet18   # tests/ is on sys.path

SMALL_8 = {"LOG_BLOCK": 3, "LOG_INP_BUFF_SIZE": 14, "LOG_WGT_BUFF_SIZE": 16, "LOG_ACC_BUFF_SIZE": 16}
SWEEP = {"name": "ResNet-18, small form", "base": "pynq", "points": [
    SMALL_8, {**SMALL_8, "clock_mhz": 200},
    {}, {"clock_mhz": 200},
    {"LOG_INP_BUFF_SIZE": 14, "LOG_WGT_BUFF_SIZE": 17, "LOG_ACC_BUFF_SIZE": 16},
    {"bus_width_bits": 128},
    {"LOG_BATCH": 1},
    {"LOG_BLOCK": 5}, {"LOG_BLOCK": 5, "clock_mhz": 200}]}
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def model():
    return resnet18(image=32, classes=100)


@pytest.fixture(scope="module")
def dse(model, tmp_path_factory):
    out = tmp_path_factory.mktemp("dse_resnet18")
    return explore(model, SWEEP, out, synthesizer=fake_synthesize, log=None)


def _dominates(a: dict, b: dict) -> bool:
    return all(a[k] <= b[k] for k in OBJECTIVES) and any(a[k] < b[k] for k in OBJECTIVES)


@pytest.mark.slow
def test_resnet18_over_nine_configurations(dse, model):
    rows = dse.rows
    assert len(rows) == 9 and {r["config"]["LOG_BLOCK"] for r in rows} == {3, 4, 5}
    assert all(r["status"] == "ok" and r["synth_status"] == "ok" for r in rows), \
        [(r["id"], r["error"], r["synth_error"]) for r in rows]
    assert all(r["macs_on_cpu"] == 0 and r["untiled"] == [] for r in rows)      # the whole model offloaded
    assert {r["synth_tool"] for r in rows} == {"test stub"}
    assert dse.synthesized == 6                       # one per RTL: the points differing in clock share one

    # the oracle: one configuration per BLOCK compiled and simulated directly (a direct compile
    # of ResNet-18 costs ~10 s on CI's cores); points that differ only in clock share the cycles
    calib, inputs = sample_inputs(model, None)
    by_hw = {}
    for row in rows:
        by_hw.setdefault(json.dumps({k: v for k, v in row["config"].items() if k != "clock_mhz"},
                                    sort_keys=True), set()).add(row["cycles"])
    assert len(by_hw) == 6 and all(len(cycles) == 1 for cycles in by_hw.values()), by_hw
    one_per_block = {r["config"]["LOG_BLOCK"]: r for r in rows}.values()
    for row in one_per_block:
        config = load_config(row["config"])
        direct = simulate(compile_model(model, target="vdla", hw_config=config, calibration=calib), config, inputs)
        assert row["cycles"] == direct["cycles"], row["id"]

    by_block = {r["config"]["LOG_BLOCK"]: r["cycles"] for r in rows
                if r["config"]["LOG_BATCH"] == 0 and r["config"]["bus_width_bits"] == 64}
    assert by_block[5] < by_block[4] < by_block[3]

    # the front equals the brute-force one: the rows no other row dominates
    brute = [r["id"] for r in rows if not any(_dominates(o, r) for o in rows if o is not r)]
    assert dse.pareto == brute == [r["id"] for r in rows if r["pareto"]]

    doc = json.loads(open(dse.files["json"]).read())
    assert doc["pareto"] == dse.pareto and [p["id"] for p in doc["points"]] == [r["id"] for r in rows]
    for point in doc["points"]:
        assert {"config", "cycles", "lut", "ff", "dsp", "bram36", "fits_xc7z020"} <= set(point)
        assert isinstance(point["config"], dict) and point["cycles"] > 0 and point["lut"] > 0
        assert isinstance(point["fits_xc7z020"], bool)
    assert open(dse.files["png"], "rb").read(8) == PNG
