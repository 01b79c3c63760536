"""Tuning logs: a round trip keeps every record; lookups match signature and hardware; every
malformed file or record is refused with TuningFileError naming the file, the record and
the field."""
import json

import pytest

from vdla.compiler.vdla import KernelSpec
from vdla.compiler.topi.vdla import ConvKnobs, ConvLayer, DenseKnobs, DenseLayer, Epilogue
from vdla.compiler.tune import TuningFileError, TuningLog, TuningRecord, load_tuning, tuning_hash
from vdla.compiler.tune.signature import kernel_signature
from vdla.hw import load_config

CFG = load_config("pynq")
CONV = KernelSpec("VdlaConv", ConvLayer(1, 2, 8, 8, 2), Epilogue(bias=True, shift=7))
DENSE = KernelSpec("VdlaDense", DenseLayer(1, 4, 4), Epilogue(shift=5, round=True))


def record(spec, knobs, default, cycles=90, default_cycles=100, config=CFG) -> TuningRecord:
    sig = kernel_signature(spec)
    return TuningRecord(sig["op"], sig["layer"], tuple(sig["epilogue"]), False, tuning_hash(config), config.name,
                        knobs, cycles, default, default_cycles, 8)


def good_log() -> TuningLog:
    return TuningLog([record(CONV, ConvKnobs(1, 4, 8, 0, 2, "h"), ConvKnobs(2, 8, 8)),
                      record(DENSE, DenseKnobs(1, 2, 0, 1), DenseKnobs(1, 4, 0, 1))])


def test_round_trip_and_lookup(tmp_path):
    path = tmp_path / "t.json"
    good_log().save(path)
    log = load_tuning(path)
    assert log.records == good_log().records
    assert log.lookup(CFG, CONV).knobs == ConvKnobs(1, 4, 8, 0, 2, "h")
    assert log.lookup(CFG, DENSE).knobs == DenseKnobs(1, 2, 0, 1)
    # another epilogue kind, another layer, another hardware, a kernel that is not tuned: no record
    assert log.lookup(CFG, KernelSpec("VdlaConv", CONV.layer, Epilogue(bias=True, shift=7, lo=0, hi=None))) is None
    assert log.lookup(CFG, KernelSpec("VdlaConv", ConvLayer(1, 2, 8, 8, 4), CONV.ep)) is None
    assert log.lookup(load_config("ultra96"), CONV) is None
    assert log.lookup(CFG, KernelSpec("VdlaAdd", None, Epilogue())) is None
    # same kind with other immediates: the same record
    assert log.lookup(CFG, KernelSpec("VdlaConv", CONV.layer, Epilogue(bias=True, shift=12))) is not None


def test_a_log_keeps_the_faster_record_of_one_key():
    log = good_log()
    slower = record(CONV, ConvKnobs(2, 8, 8), ConvKnobs(2, 8, 8), cycles=95)
    assert not log.add(slower) and log.lookup(CFG, CONV).cycles == 90
    assert log.add(slower, replace=True) and log.lookup(CFG, CONV).cycles == 95


def _doc():
    return good_log().to_dict()


def _set(path, value):
    def edit(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        if value is _DELETE:
            del target[path[-1]]
        else:
            target[path[-1]] = value
        return doc
    return edit


_DELETE = object()

BAD = [
    (lambda d: [], "a tuning log is a JSON object"),
    (_set(("format",), "vdla-kernel-program/1"), "not a vdla tuning log"),
    (_set(("version",), 3), "version 3"),
    (_set(("records",), {}), "'records' must be a list"),
    (_set(("records", 0), "conv"), "record 0: a record is a JSON object"),
    (_set(("records", 1, "cycles"), _DELETE), "record 1: missing field.*cycles"),
    (_set(("records", 0, "speed"), 3), "record 0: unknown field.*speed"),
    (_set(("records", 0, "op"), "pool2d"), "record 0: field 'op' is 'pool2d'"),
    (_set(("records", 0, "knobs", "tile_h"), "4"), "record 0: field 'knobs': tile_h must be an integer"),
    (_set(("records", 0, "knobs", "vthreads"), 9), "record 0: field 'knobs': not a valid ConvKnobs.*vthreads"),
    (_set(("records", 0, "knobs", "unroll"), 2), "record 0: field 'knobs': unknown ConvKnobs field.*unroll"),
    (_set(("records", 0, "layer", "pads"), [1, "1"]), "record 0: field 'layer': pads must be a list of integers"),
    (_set(("records", 1, "default_knobs"), [1, 2]), "record 1: field 'default_knobs' must be a JSON object"),
    (_set(("records", 0, "epilogue"), "bias"), "record 0: field 'epilogue' must be a list"),
    (_set(("records", 0, "vta_compat"), 0), "record 0: field 'vta_compat' must be true or false"),
    (_set(("records", 0, "hw_hash"), ""), "record 0: field 'hw_hash' must be a non-empty string"),
    (_set(("records", 0, "cycles"), -5), "record 0: field 'cycles' must be a positive integer"),
    (_set(("records", 1, "trials"), True), "record 1: field 'trials' must be a positive integer"),
    (_set(("records", 0, "cycles"), 101), "record 0: cycles 101 exceed the default schedule's 100"),
]


@pytest.mark.parametrize("edit, message", BAD, ids=[m for _, m in BAD])
def test_bad_logs_are_refused_naming_what_is_wrong(tmp_path, edit, message):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(edit(_doc())))
    with pytest.raises(TuningFileError, match=message) as info:
        load_tuning(path)
    assert str(path) in str(info.value)


def test_unreadable_and_non_json_files(tmp_path):
    with pytest.raises(TuningFileError, match="cannot be read"):
        load_tuning(tmp_path / "missing.json")
    (tmp_path / "t.json").write_text('{"format": ')
    with pytest.raises(TuningFileError, match="not valid JSON"):
        load_tuning(tmp_path / "t.json")
    (tmp_path / "b.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(TuningFileError, match="not valid JSON"):
        load_tuning(tmp_path / "b.json")
    (tmp_path / "nested.json").write_text("[" * 100_000)     # past the JSON reader's recursion
    with pytest.raises(TuningFileError, match=r"nested.json: not valid JSON \(maximum recursion depth"):
        load_tuning(tmp_path / "nested.json")


def test_saves_of_two_logs_to_one_file_merge_keeping_the_faster_record(tmp_path):
    """Two runs on one log: each save merges with the file as it is then, so neither loses the
    other's records; per key the faster record stays, unless a retune replaced it."""
    path = tmp_path / "t.json"
    first = TuningLog([record(CONV, ConvKnobs(1, 4, 8, 0, 2, "h"), ConvKnobs(2, 8, 8), cycles=90)])
    second = TuningLog([record(DENSE, DenseKnobs(1, 2, 0, 1), DenseKnobs(1, 4, 0, 1)),
                        record(CONV, ConvKnobs(2, 8, 8), ConvKnobs(2, 8, 8), cycles=95)])
    first.save(path)
    second.save(path)
    log = load_tuning(path)
    assert len(log) == 2 and log.lookup(CFG, CONV).cycles == 90 and log.lookup(CFG, DENSE) is not None
    assert second.records == log.records            # the saving log holds the merge
    retuned = TuningLog()
    retuned.add(record(CONV, ConvKnobs(2, 8, 8), ConvKnobs(2, 8, 8), cycles=97), replace=True)
    retuned.save(path)
    log = load_tuning(path)
    assert log.lookup(CFG, CONV).cycles == 97 and log.lookup(CFG, DENSE) is not None


def test_concurrent_writers_keep_every_record(tmp_path):
    import threading
    path = tmp_path / "t.json"

    def writer(first_channel):
        log = TuningLog()
        for c in range(first_channel, first_channel + 10):
            log.add(record(KernelSpec("VdlaDense", DenseLayer(1, 4, c), DENSE.ep), DenseKnobs(1, 2, 0, 1),
                           DenseKnobs(1, 4, 0, 1)))
            log.save(path)
    threads = [threading.Thread(target=writer, args=(c,)) for c in (1, 101)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(load_tuning(path)) == 20


def test_random_and_mutated_logs_are_read_or_refused_with_the_file_named(tmp_path):
    import json_fuzz
    json_fuzz.check_reader(load_tuning, tmp_path / "log.json", _doc(), TuningFileError, seed=3)