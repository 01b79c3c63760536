"""A tuning run stopped inside a kernel's search resumes there (vdla.compiler.tune.journal):
the measurements of the interrupted run are handed to the rerun's search, which measures only
what is left and ends with the record of a run that was never interrupted; lines cut off by
the interrupt, or of another kernel, hardware or data, are measured again."""
import pytest

from vdla.compiler.tune import search as search_mod
from vdla.compiler.tune.journal import TrialJournal, kernel_key
from vdla.compiler.tune.measure import measure as real_measure
from vdla.compiler.tune.search import KernelSearch, run_searches
from vdla.compiler.tune.signature import kernel_signature
from vdla.compiler.vdla.lower import KernelSpec
from vdla.compiler.topi.vdla import ConvLayer, Epilogue
from vdla.hw import load_config

CFG = load_config("pynq")
CONV = KernelSpec("VdlaConv", ConvLayer(1, 1, 32, 32, 1, pad_value=-128),
                  Epilogue(bias=True, pre_shift=2, scale=True, shift=18))
BUDGET = 8


def search(config=CFG, seed=0):
    return KernelSearch(0, config, CONV, kernel_signature(CONV), "conv", BUDGET, seed=seed)


class Stop(Exception):
    pass


def _counting(monkeypatch, stop_after=None):
    """measure() counted, and raising Stop (an interrupt) after `stop_after` calls."""
    calls = []

    def measure(trial):
        if stop_after is not None and len(calls) == stop_after:
            raise Stop
        calls.append(trial.knobs)
        return real_measure(trial)
    monkeypatch.setattr(search_mod, "measure", measure)
    return calls


def test_a_search_stopped_midway_resumes_and_ends_with_the_uninterrupted_record(tmp_path, monkeypatch):
    jobs = 1        # (on a process pool the measuring is in the workers, out of the monkeypatch's reach)
    whole = search()
    run_searches([whole], jobs=jobs, progress=False)

    path = tmp_path / "log.json.trials"
    _counting(monkeypatch, stop_after=5)
    with pytest.raises(Stop):
        run_searches([search()], jobs=jobs, progress=False, journal=TrialJournal(path))
    assert len(TrialJournal(path)) == 5

    calls = _counting(monkeypatch)
    resumed = search()
    run_searches([resumed], jobs=jobs, progress=False, journal=TrialJournal(path))
    assert len(calls) == len(whole.measured) - 5          # the five came from the journal
    assert resumed.record() == whole.record() and resumed.asked == whole.asked


def test_a_cut_line_and_another_kernels_lines_are_measured_again(tmp_path, monkeypatch):
    path = tmp_path / "log.json.trials"
    first = search()
    run_searches([first], jobs=1, progress=False, journal=TrialJournal(path))
    with open(path, "a") as f:
        f.write('{"kernel": "' + kernel_key(first) + '", "knobs": "cut off by the interr')
    assert len(TrialJournal(path)) == len(first.measured)

    calls = _counting(monkeypatch)
    run_searches([search()], jobs=1, progress=False, journal=TrialJournal(path))
    assert calls == []                                    # all of it from the journal
    other = search(seed=1)                                # other data: other digests
    assert kernel_key(other) != kernel_key(first)
    run_searches([other], jobs=1, progress=False, journal=TrialJournal(path))
    assert len(calls) == len(other.measured)
    assert kernel_key(search(load_config("ultra96"))) != kernel_key(first)


def test_tune_model_removes_the_journal_when_it_finishes(tmp_path, model_a, calibration):
    from vdla.compiler.tune import tune_model
    path = tmp_path / "tuning.json"
    tune_model(model_a, CFG, trials=3, jobs=1, output=path, calibration=calibration, progress=False)
    assert path.exists() and not (tmp_path / "tuning.json.trials").exists()


def test_on_a_process_pool_the_journal_answers_too(tmp_path):
    path = tmp_path / "log.json.trials"
    first = search()
    run_searches([first], jobs=1, progress=False, journal=TrialJournal(path))
    again = search()
    run_searches([again], jobs=2, progress=False, journal=TrialJournal(path))
    # the same measurements, seconds included: none was measured again
    assert again.measured == first.measured and again.record() == first.record()
