"""The records of a KernelProgram's calls (vdla.driver.runtime.program_calls): each reads back
from its JSON list unchanged, a malformed list is refused naming the call and the field, and
replay issues each record as the CommandQueue method it stands for."""
import pytest

from vdla.driver.runtime import KernelProgram, ProgramParam, RuntimeStreamError, Stage
from vdla.driver.runtime.program_calls import CALLS, Alu, Gemm, Load, Pop, Push, Store, call_from_list
from vdla.hw import MemType

L, C, S = int(Stage.LOAD), int(Stage.COMPUTE), int(Stage.STORE)
RECORDS = [Load(int(MemType.INP), 3, 0, 64, 4, 2, 8, 1, 0, 1, 0), Load(int(MemType.INP), 0, 1, 0, 4, 2, 4, 1, 1, 0, 0,
                                                                      pad_min=1),
           Store(5, 2, 16, 4, 1, 4), Gemm(0), Alu(1), Push(L, C), Pop(C, S)]


@pytest.mark.parametrize("record", RECORDS, ids=repr)
def test_a_record_reads_back_from_its_list(record):
    item = record.to_list()
    assert item[0] == record.NAME and all(type(v) is int for v in item[1:])
    assert call_from_list(item, 0) == record


def test_a_load_writes_pad_min_only_when_set():
    """The form of programs compiled before the records: 12 fields, a 13th (1) for max pooling."""
    assert len(RECORDS[0].to_list()) == 12 and RECORDS[1].to_list()[-1] == 1 and len(RECORDS[1].to_list()) == 13


@pytest.mark.parametrize("item, match", [
    (["jump", 3], r"call 4 \['jump', 3\] is malformed: expected \[name, fields...\] with name one of load, store"),
    ([], r"call 4 \[\] is malformed"),
    ("gemm", r"call 4 'gemm' is malformed"),
    (["gemm"], r"call 4 \['gemm'\] is malformed: gemm takes 1 field\(s\) \(kernel\), got 0"),
    (["store", 0, 1], r"store takes 6 field\(s\) \(sram, param, elem_offset, x_size, y_size, x_stride\), got 2"),
    (["load"] + [0] * 10, r"load takes 11 or 12 field\(s\) .*, got 10"),
    (["store", 0, 1, "16", 4, 1, 4], r"call 4 \(store\): field elem_offset must be an integer .*, got '16'"),
    (["alu", True], r"call 4 \(alu\): field kernel must be an integer"),
    (["gemm", 1.0], r"call 4 \(gemm\): field kernel must be an integer"),
    (["gemm", 1 << 60], r"call 4 \(gemm\): field kernel must be an integer of magnitude below 2\*\*48"),
    (["push", 0, 7], r"call 4 \(push\): field dst is 7, no Module \(0, 1, 2\)"),
    (["load", 9] + [0] * 10, r"call 4 \(load\): field mem_type is 9, no MemType"),
])
def test_a_malformed_call_is_refused_naming_the_call_and_the_field(item, match):
    with pytest.raises(RuntimeStreamError, match=match):
        call_from_list(item, 4)


def test_a_program_names_itself_and_the_call_in_the_error():
    doc = KernelProgram("k", "h", [ProgramParam("x", 64, 1)], [], [Gemm(0)]).to_dict()
    doc["calls"] = [["push", L, C], ["store", 0, 0, "0", 1, 1, 1]]
    with pytest.raises(RuntimeStreamError, match=r"kernel program k: call 1 \(store\): field elem_offset"):
        KernelProgram.from_dict(doc)


class _Recorder:
    """A stand-in CommandQueue: what replay called, with what."""

    def __init__(self, config):
        self.config, self.calls = config, []

    def __getattr__(self, name):
        return lambda *args, **kwargs: self.calls.append((name, args, kwargs))


def test_replay_issues_each_record_as_its_queue_method():
    config = type("Config", (), {"hash": "h", "name": "c"})()
    bufs = [type("Buf", (), {"nbytes": 1 << 20, "name": f"b{i}"})() for i in range(3)]
    kernels = ["kernel0", "kernel1"]
    program = KernelProgram("k", "h", [ProgramParam(f"p{i}", 64, 1) for i in range(3)], kernels, list(RECORDS))
    cq = _Recorder(config)
    program.replay(cq, bufs)
    assert [name for name, _, _ in cq.calls] == ["load_2d", "load_2d", "store_2d", "push_gemm", "push_alu",
                                                 "dep_push", "dep_pop"]
    (_, args, kwargs), (_, _, padded) = cq.calls[:2]
    assert args == (MemType.INP, 3, bufs[0], 64, 4, 2, 8) and kwargs == {"y_pad": (1, 0), "x_pad": (1, 0),
                                                                           "pad_min": False}
    assert padded["pad_min"] is True
    assert cq.calls[2][1] == (5, bufs[2], 16, 4, 1, 4)
    assert cq.calls[3][1] == ("kernel0",) and cq.calls[4][1] == ("kernel1",)
    assert cq.calls[5][1] == (Stage.LOAD, Stage.COMPUTE) and cq.calls[6][1] == (Stage.COMPUTE, Stage.STORE)
    assert program.count("load") == 2 and set(CALLS) == {r.NAME for r in RECORDS}
