"""What every tuning run does before it searches (vdla.compiler.tune.session): the budget
checked, the log opened, the kernels the log already has reused unless retuning."""
import pytest

from vdla.compiler.tune.errors import TuningError
from vdla.compiler.tune.records import TuningLog
from vdla.compiler.tune.session import check_budget, open_log, split_reused


def test_the_budget_needs_a_trial_and_a_process():
    assert check_budget(1, 3, "measures") == 3
    assert check_budget(1, None, "measures") >= 1                 # every core
    with pytest.raises(TuningError, match="--trials 0: each kernel needs at least one trial"):
        check_budget(0, 1, "measures")
    with pytest.raises(TuningError, match="--jobs 0: at least one process compiles"):
        check_budget(1, 0, "compiles")


def test_a_missing_log_opens_empty(tmp_path):
    assert isinstance(open_log(None), TuningLog)
    assert isinstance(open_log(tmp_path / "none.json"), TuningLog)


def test_kernels_in_the_log_are_reused_unless_retuning():
    log = {"a": "record of a", "c": "record of c"}
    assert split_reused(["a", "b", "c"], log.get, retune=False) == ({0: "record of a", 2: "record of c"}, [1])
    assert split_reused(["a", "b", "c"], log.get, retune=True) == ({}, [0, 1, 2])
