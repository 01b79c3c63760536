"""The DSE's progress bar (vdla.compiler.dse.progress): it counts points, says the stage (Yosys
runs left, then compile and simulation only), prints the per-point lines above it (on stdout, as
before), and ticks
while nothing finishes (a synthesis takes minutes); none where stderr is no terminal."""
import time

from vdla.compiler.dse import progress as P


def test_the_bar_says_the_stage_and_takes_the_lines(capsys, monkeypatch):
    monkeypatch.setattr(P, "TICK_S", 0.05)
    with P.dse_progress(3, 2, show=True) as bar:
        assert bar is not None
        time.sleep(0.2)                        # a long synthesis: the bar redraws on its own
        bar.done(True, "  [1/3] p0: 100 cycles")
        bar.done(False, "  [2/3] p1: 90 cycles")
        bar.done(True, "  [3/3] p2: 80 cycles")
    captured = capsys.readouterr()
    err = captured.err
    assert "2 Yosys run(s) left" in err and "1 Yosys run(s) left" in err and "compiling and simulating" in err
    assert "[2/3] p1: 90 cycles" in captured.out and "3/3" in err       # the lines where the log printed them
    assert err.count("0/3") >= 2                       # redrawn before any point finished


def test_no_bar_where_it_is_not_asked_for(capsys):
    with P.dse_progress(3, 1, show=False) as bar:
        assert bar is None
    assert capsys.readouterr().err == ""
