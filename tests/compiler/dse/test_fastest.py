"""A board's answer (vdla.compiler.dse.fastest): the fastest row that fits its part, on rows made
by hand so that each rule decides one case."""
from vdla.compiler.dse.fastest import fastest_fitting


def _row(id, ms, fits=("xck26",), **extra):
    return {"id": id, "status": "ok", "synth_status": "ok", "ms": ms, "fits": fits and list(fits), "lut": 1000,
            "ff": 1000, "dsp": 100, "bram36": 10, "uram": 0, "untiled": [], **extra}


def test_the_fastest_row_that_fits_wins():
    rows = [_row("slow", 120.0), _row("fast", 56.0), _row("fastest_but_too_big", 28.0, fits=("xczu7ev",))]
    assert fastest_fitting(rows, "xck26")["id"] == "fast"
    assert fastest_fitting(rows, "xczu7ev")["id"] == "fastest_but_too_big"


def test_rows_that_cannot_compete_are_left_out():
    rows = [_row("untiled", 10.0, untiled=["conv1"]),                  # its latency leaves CPU layers out
            _row("sim_failed", None, status="sim_failed"),
            _row("no_figures", 20.0, synth_status="failed", fits=None),
            _row("unsynthesized", 30.0, synth_status="skipped", fits=None),
            _row("invalid", None, status="invalid", fits=None),
            _row("fits", 90.0)]
    assert fastest_fitting(rows, "xck26")["id"] == "fits"
    assert fastest_fitting(rows[:-1], "xck26") is None
    assert fastest_fitting([], "xck26") is None


def test_equal_latency_goes_to_fewer_dsp_then_luts_then_the_sweep_order():
    rows = [_row("more_dsp", 50.0, dsp=200), _row("more_lut", 50.0, lut=2000), _row("first", 50.0),
            _row("second", 50.0)]
    assert fastest_fitting(rows, "xck26")["id"] == "first"
    assert fastest_fitting(rows[:2], "xck26")["id"] == "more_lut"
