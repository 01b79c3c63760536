"""A remote run's result on the wire (vdla.driver.remote.run_result): what the worker writes the
client reads back unchanged, and a result whose sizes, times or profile rows do not fit is a
ProtocolError naming the peer and the field."""
import dataclasses

import numpy as np
import pytest

from vdla.driver.profile import LayerProfile
from vdla.driver.remote import ProtocolError
from vdla.driver.remote.errors import LimitExceeded
from vdla.driver.remote.limits import Limits
from vdla.driver.remote.run_result import RemoteResult, result_from_wire, result_to_wire


def _result(rng, profile=True):
    rows = [LayerProfile("conv1", "Conv", "vdla", 0.25, 1200, 2000, 0.5, 100.0),
            LayerProfile("softmax", "Softmax", "cpu", 0.01)] if profile else None
    outputs = {"y": rng.standard_normal((2, 3)).astype(np.float32), "idx": np.arange(4, dtype=np.int64)}
    return RemoteResult(outputs, rows, [0.5, 0.25], "sim", "small_cnn on sim")


def _wire(result):
    header, parts = result_to_wire(result)
    return header, bytearray(b"".join(bytes(memoryview(p)) for p in parts))


@pytest.mark.parametrize("profile", [True, False], ids=["profile", "no_profile"])
def test_a_result_round_trips(rng, profile):
    sent = _result(rng, profile)
    got = result_from_wire(*_wire(sent), Limits(), "board:9091")
    assert got.outputs.keys() == sent.outputs.keys()
    for name, value in sent.outputs.items():
        assert got.outputs[name].dtype == value.dtype
        np.testing.assert_array_equal(got.outputs[name], value)
    assert got.profile == sent.profile and got.times_s == sent.times_s
    assert (got.device, got.chart_title) == (sent.device, sent.chart_title)


def _broken(rng, change):
    header, payload = _wire(_result(rng))
    payload = change(header, payload) or payload
    return header, payload


@pytest.mark.parametrize("change, match", [
    (lambda h, p: p + b"\0", r"board's result: the outputs take 56 bytes, the payload has 57"),
    (lambda h, p: h.update(times_s=[0.5, float("nan")]), r"times_s must be a list of numbers"),
    (lambda h, p: h.update(times_s=[True]), r"times_s must be a list of numbers"),
    (lambda h, p: h["profile"][0].pop("cycles") and None, r"profile row 0: expected the fields"),
    (lambda h, p: h["profile"][1].update(cycles=True), r"profile row 1: field 'cycles' must be int, got True"),
    (lambda h, p: h["profile"][1].update(name=3), r"profile row 1: field 'name' must be str"),
    (lambda h, p: h.update(device=None), r"device"),
])
def test_a_result_that_does_not_fit_is_named(rng, change, match):
    header, payload = _broken(rng, change)
    with pytest.raises(ProtocolError, match=match):
        result_from_wire(header, payload, Limits(), "board")


def test_outputs_beyond_the_clients_limit_are_refused_before_reading_them(rng):
    header, payload = _wire(_result(rng))
    with pytest.raises(LimitExceeded, match=r"board's result: outputs: the arrays up to 'idx' take 56 bytes; "
                                            r"the limit is 32 bytes"):
        result_from_wire(header, payload, dataclasses.replace(Limits(), output_bytes=32), "board")
