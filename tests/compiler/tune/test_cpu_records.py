"""CPU records in the tuning log: they round-trip beside accelerator records, are keyed by the
kernel's signature and the host (a record of another CPU never applies), old logs still load,
and a bad CPU record is refused naming the record and the field."""
import json

import pytest

from vdla.compiler import te, topi
from vdla.compiler.target import Target
from vdla.compiler.topi.cpu_knobs import DirectConvKnobs, WinogradKnobs
from vdla.compiler.tune import TuningFileError, load_tuning
from vdla.compiler.tune.cpu_records import CpuTuningRecord
from vdla.compiler.tune.cpu_signature import cpu_signature, host_hash, host_name
from vdla.compiler.tune.records import TuningLog


def _conv(c=2, width=12, stride=1):
    x = te.placeholder((1, c, width, width, 16), "float32", "x")
    w = te.placeholder((2, c, 3, 3, 16, 16), "float32", "w")
    return topi.relu(topi.conv2d_nchwc(x, w, strides=stride, pads=1))


def _record(target, sig, knobs=DirectConvKnobs(6, 2), ms=0.5, default_ms=0.8):
    return CpuTuningRecord("conv2d_nchwc", sig, host_hash(target), host_name(target), target.threads, knobs, ms,
                           DirectConvKnobs(12, 1), default_ms, 8)


@pytest.fixture(scope="module")
def host():
    return Target.host(threads=2)


@pytest.fixture
def vdla_record_doc():
    """An accelerator record as a log holds it."""
    from vdla.compiler.vdla import KernelSpec
    from vdla.compiler.topi.vdla import ConvKnobs, ConvLayer, Epilogue
    from vdla.compiler.tune import TuningRecord, tuning_hash
    from vdla.compiler.tune.signature import kernel_signature
    sig = kernel_signature(KernelSpec("VdlaConv", ConvLayer(1, 2, 8, 8, 2), Epilogue(bias=True, shift=7)))
    config = _config()
    return TuningRecord(sig["op"], sig["layer"], tuple(sig["epilogue"]), False, tuning_hash(config), config.name,
                        ConvKnobs(1, 4, 8, 0, 2, "h"), 90, ConvKnobs(2, 8, 8), 100, 8).to_dict()


def test_records_round_trip_beside_accelerator_records(tmp_path, host, vdla_record_doc):
    sig = cpu_signature([_conv()])
    log = TuningLog([_record(host, sig)])
    log.save(tmp_path / "t.json")
    doc = json.loads((tmp_path / "t.json").read_text())
    doc["records"].append(vdla_record_doc)
    (tmp_path / "t.json").write_text(json.dumps(doc))
    back = load_tuning(tmp_path / "t.json")
    assert len(back) == 2 and doc["version"] == 2
    assert back.lookup_cpu(host, cpu_signature([_conv()])) == _record(host, sig)
    assert back.records[_record(host, sig).key].to_dict() == doc["records"][0]


def test_a_record_applies_to_its_kernel_on_its_host_only(host):
    log = TuningLog([_record(host, cpu_signature([_conv()]))])
    assert log.lookup_cpu(host, cpu_signature([_conv()])) is not None
    assert log.lookup_cpu(host, cpu_signature([_conv(width=14)])) is None         # another shape
    assert log.lookup_cpu(host, cpu_signature([_conv(stride=2)])) is None         # another stride
    other = Target(host.triple, "skylake-avx512", "+avx2,+avx512f,+fma", threads=2)
    assert log.lookup_cpu(other, cpu_signature([_conv()])) is None
    assert log.other_hosts(other) == {host_name(host): 1} and log.other_hosts(host) == {}
    assert host_hash(host.with_threads(16)) == host_hash(host)     # threads are not the host
    assert log.other_hardware(_config()) == 0                     # CPU records are no accelerator's


def _config():
    from vdla.hw import load_config
    return load_config("pynq")


def test_the_faster_of_two_records_for_one_key_is_kept(host):
    sig = cpu_signature([_conv()])
    log = TuningLog([_record(host, sig, ms=0.5)])
    assert not log.add(_record(host, sig, DirectConvKnobs(4, 2), ms=0.6))
    assert log.add(_record(host, sig, DirectConvKnobs(4, 2), ms=0.4))
    assert log.lookup_cpu(host, sig).knobs == DirectConvKnobs(4, 2)


def test_a_version_1_log_still_loads(tmp_path, vdla_record_doc):
    (tmp_path / "old.json").write_text(json.dumps({"format": "vdla-tuning-log", "version": 1,
                                                   "records": [vdla_record_doc]}))
    assert len(load_tuning(tmp_path / "old.json")) == 1


def _doc(host):
    return _record(host, cpu_signature([_conv()])).to_dict()


def _edit(**fields):
    def edit(doc):
        for k, v in fields.items():
            if v is None:
                del doc[k]
            else:
                doc[k] = v
        return doc
    return edit


BAD = [
    (_edit(target="gpu"), "field 'target' is 'gpu'"),
    (_edit(ms=None), "missing field.*ms"),
    (_edit(speed=1), "unknown field.*speed"),
    (_edit(kernel="pool"), "field 'kernel' is 'pool'"),
    (_edit(signature={"kernel": "conv2d_nchwc"}), "field 'signature' must be"),
    (_edit(ms=0.9), "ms 0.9 exceeds the default schedule's 0.8"),
    (_edit(default_ms=-1), "'default_ms' must be a positive number"),
    (_edit(threads=0), "'threads' must be a positive integer"),
    (_edit(knobs={"row_tile": "6"}), "field 'knobs': row_tile must be an integer"),
    (_edit(knobs={"row_tile": 6, "whole_image": True}), "unknown DirectConvKnobs field.*whole_image"),
    (_edit(knobs={"row_tile": 0}), "not a valid DirectConvKnobs: DirectConvKnobs.row_tile must be a positive"),
]


@pytest.mark.parametrize("edit, message", BAD, ids=[m for _, m in BAD])
def test_bad_cpu_records_are_refused_naming_what_is_wrong(tmp_path, host, edit, message):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"format": "vdla-tuning-log", "version": 2, "records": [edit(_doc(host))]}))
    with pytest.raises(TuningFileError, match=f"record 0: .*{message}"):
        load_tuning(path)


def test_a_cpu_record_in_a_version_1_log_is_refused(tmp_path, host):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"format": "vdla-tuning-log", "version": 1, "records": [_doc(host)]}))
    with pytest.raises(TuningFileError, match="record 0: field 'target' is 'cpu'.*version 2"):
        load_tuning(path)


def test_winograd_knobs_round_trip_with_their_booleans(host):
    rec = CpuTuningRecord("conv2d_nchwc_winograd", {"kernel": "conv2d_nchwc_winograd", "stages": [], "expr": "0"},
                          host_hash(host), host_name(host), 2, WinogradKnobs(True, 4, 4), 0.25,
                          WinogradKnobs(False, 7, 2), 0.5, 3)
    assert CpuTuningRecord.from_dict(json.loads(json.dumps(rec.to_dict())), "r") == rec
