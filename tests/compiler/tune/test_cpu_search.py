"""The CPU search's decisions, timed by a fake timer (tables, never a clock): the default wins
ties and near ties, a candidate replaces it only if it is MARGIN faster when first measured
and again in the paired timing, a candidate computing another output is never recorded, and a
default that fails leaves no record."""
import numpy as np
import pytest

from vdla.compiler.target import Target
from vdla.compiler.tune.cpu_search import MARGIN, CpuKernelSearch
from vdla.compiler.tune.cpu_space import CpuKnobSpace
from vdla.compiler.tune import load_tuning
from vdla.compiler.tune.cpu_tune_model import cpu_model_kernels, tune_cpu_kernels
from vdla.compiler.topi.cpu_knobs import RegisterFile, default_knobs

from cpu_models import cpu_knob_model


class FakeTimer:
    """ms per knobs: `screen` when a search compares them with the default, `paired` when a
    finalist is timed against the default again (unlisted knobs: `base`). Each kernel still
    runs, so outputs are real."""

    def __init__(self, screen=None, paired=None, base=1.0):
        self.screen, self.paired_ms, self.base = screen or {}, paired or {}, base
        self.pairs = []

    def time(self, knobs, run):
        run()
        return self.screen.get(knobs, self.base)

    def compare(self, knobs_a, run_a, knobs_b, run_b):
        run_a(), run_b()
        return self.screen.get(knobs_a, self.base), self.screen.get(knobs_b, self.base)

    def paired(self, knobs_a, run_a, knobs_b, run_b):
        run_a(), run_b()
        self.pairs.append(knobs_b)
        return self.paired_ms.get(knobs_a, self.base), self.paired_ms.get(knobs_b, self.base)


@pytest.fixture(scope="module")
def host():
    return Target.host(threads=2)


@pytest.fixture(scope="module")
def strided(host):
    """The strided direct conv of the small model, and its first four settings (default first)."""
    kernel = next(k for k in cpu_model_kernels(cpu_knob_model()) if k.nodes == ["strided"])
    default = default_knobs(kernel.kind, kernel.dims, RegisterFile.of(host))
    points = CpuKnobSpace(kernel.kind, kernel.dims, default).points[:4]
    return kernel, points


def _tune(strided, host, timer, tmp_path=None):
    kernel, _ = strided
    out = None if tmp_path is None else tmp_path / "t.json"
    summary = tune_cpu_kernels([kernel], host, trials=4, jobs=1, output=out, timer=timer, progress=False)
    (result,) = summary.results
    return result


def test_the_default_wins_a_tie(strided, host, tmp_path):
    result = _tune(strided, host, FakeTimer(), tmp_path)
    assert result.record.knobs == result.record.default_knobs == strided[1][0]
    assert result.record.ms == result.record.default_ms and result.record.trials == 4
    assert not result.mismatched and not result.failed


def test_a_candidate_within_the_margin_does_not_replace_the_default(strided, host):
    timer = FakeTimer({strided[1][2]: 1.0 / (1 + MARGIN) + 1e-6})
    result = _tune(strided, host, timer)
    assert result.record.knobs == strided[1][0] and timer.pairs == []


def test_a_candidate_faster_only_when_first_measured_is_not_recorded(strided, host):
    points = strided[1]
    timer = FakeTimer({points[1]: 0.8, points[3]: 0.85}, paired={points[1]: 0.99, points[3]: 0.995})
    result = _tune(strided, host, timer)
    assert timer.pairs == [points[1], points[3]]        # both finalists, fastest first
    assert result.record.knobs == points[0] and result.record.ms == result.record.default_ms


def test_a_candidate_faster_when_first_measured_and_paired_is_recorded(strided, host, tmp_path):
    points = strided[1]
    timer = FakeTimer({points[1]: 0.8, points[2]: 0.7}, paired={points[0]: 1.0, points[1]: 0.9, points[2]: 0.99})
    result = _tune(strided, host, timer, tmp_path)
    assert result.record.knobs == points[1]             # the faster of the two in the paired timing
    assert (result.record.ms, result.record.default_ms) == (0.9, 1.0)


def test_a_candidate_with_another_output_is_never_recorded(strided, host):
    kernel, points = strided
    space = CpuKnobSpace(kernel.kind, kernel.dims, points[0])
    search = CpuKernelSearch(kernel, space, 3, host)
    out = [np.ones((2, 2), np.float32)]
    search.tell(search.ask(), 1.0, out)
    search.tell(search.ask(), 0.5, [out[0] + 1e-3])     # faster, but computes something else
    search.tell(search.ask(), 0.9, [out[0] + 1e-9])     # the same within float rounding
    assert search.mismatched == [points[1]]
    assert search.finalists() == [points[2]]


def test_a_default_that_fails_leaves_no_record(strided, host):
    kernel, points = strided
    search = CpuKernelSearch(kernel, CpuKnobSpace(kernel.kind, kernel.dims, points[0]), 4, host)
    search.tell(search.ask(), None, None, "TensorizeError: ...")
    assert search.ask() is None and search.record() is None and "TensorizeError" in search.broken


class InterruptingTimer(FakeTimer):
    """Ctrl-C when the default of the `stop`th kernel is timed."""

    def __init__(self, stop):
        super().__init__()
        self.stop, self.defaults = stop, 0

    def time(self, knobs, run):
        self.defaults += 1
        if self.defaults == self.stop:
            raise KeyboardInterrupt
        return super().time(knobs, run)


def test_an_interrupted_cpu_tune_keeps_the_finished_kernels_and_a_rerun_tunes_only_the_rest(host, tmp_path):
    kernels = [k for k in cpu_model_kernels(cpu_knob_model()) if k.nodes in (["strided"], ["depthwise"])]
    out = tmp_path / "t.json"
    with pytest.raises(KeyboardInterrupt):
        tune_cpu_kernels(kernels, host, trials=2, jobs=1, output=out, timer=InterruptingTimer(2), progress=False)
    saved = load_tuning(out)
    assert [r.signature for r in saved.records.values()] == [kernels[0].signature]
    timer = FakeTimer()
    rerun = tune_cpu_kernels(kernels, host, trials=2, jobs=1, output=out, timer=timer, progress=False)
    assert [r.reused for r in rerun.results] == [True, False] and rerun.trials == 2
    assert len(load_tuning(out)) == 2
