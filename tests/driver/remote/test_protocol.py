"""Remote execution's wire format without a server: frames (plain and sealed), the limits that
are checked before the bytes they bound are read, arrays on the wire, run requests, the
handshake between two keys."""
import socket
import struct
import threading

import numpy as np
import pytest

from vdla.driver.artifact_trust import generate_key_file
from vdla.driver.remote import (AuthenticationError, LimitExceeded, ProtocolError, RemoteConnectionError,
                                RemoteInputError, ServerBusy, parse_address)
from vdla.driver.remote.arrays import pack, specs_from_wire, total_bytes, unpack
from vdla.driver.remote.handshake import Credentials, client_handshake, server_handshake
from vdla.driver.remote.limits import Limits
from vdla.driver.remote.protocol import MAGIC, PREFIX, Channel, Seal, SocketStream
from vdla.driver.remote.run_request import RunRequest, parse_run_request


class BytesStream:
    """Reads from fixed bytes; reading past `readable` bytes fails the test (a limit must be
    checked before the bytes it bounds are read)."""

    def __init__(self, data: bytes, readable: int | None = None):
        self.data, self.pos = data, 0
        self.readable = len(data) if readable is None else readable
        self.written = bytearray()

    def read_into(self, view):
        n = min(view.nbytes, len(self.data) - self.pos)
        assert self.pos + n <= self.readable, f"read past byte {self.readable}: the limit was not checked first"
        view[:n] = self.data[self.pos:self.pos + n]
        self.pos += n
        return n

    def write_all(self, data):
        self.written += bytes(data)

    def flush(self):
        pass


def frame_bytes(header: dict, parts=(), seal: Seal | None = None) -> bytes:
    out = BytesStream(b"")
    Channel(out, "test", seal).send(header, parts)
    return bytes(out.written)


def seals(key=b"k" * 32):
    return Seal(key, b"a->b", b"b->a"), Seal(key, b"b->a", b"a->b")


def test_plain_frames_round_trip_with_payload_parts():
    data = frame_bytes({"type": "upload", "n": 1}, [b"abc", memoryview(b"defg")])
    header, payload = Channel(BytesStream(data), "peer").recv("upload", 4096, exact_payload=7)
    assert header == {"type": "upload", "n": 1} and payload == b"abcdefg"


def test_sealed_frames_round_trip_and_refuse_any_changed_byte():
    sender, receiver = seals()
    data = frame_bytes({"type": "upload"}, [b"payload bytes"], sender)
    header, payload = Channel(BytesStream(data), "peer", receiver).recv("upload", 4096, 100)
    assert payload == b"payload bytes"
    for position in (2, PREFIX.size + 3, len(data) - 40, len(data) - 1):   # prefix, header, payload, tag
        sender, receiver = seals()
        changed = bytearray(frame_bytes({"type": "upload"}, [b"payload bytes"], sender))
        changed[position] ^= 0x01
        with pytest.raises((ProtocolError, LimitExceeded)):
            Channel(BytesStream(bytes(changed)), "peer", receiver).recv("upload", 4096, 100)


def test_sealed_frames_refuse_replay_reflection_and_another_key():
    sender, receiver = seals()
    first = frame_bytes({"type": "run"}, (), sender)
    channel = Channel(BytesStream(first + first), "peer", receiver)
    channel.recv("run", 4096)
    with pytest.raises(ProtocolError, match="failed authentication"):
        channel.recv("run", 4096)            # the same frame again: its sequence number is spent
    reflected = frame_bytes({"type": "run"}, (), Seal(b"k" * 32, b"b->a", b"a->b"))
    with pytest.raises(ProtocolError, match="failed authentication"):
        Channel(BytesStream(reflected), "peer", Seal(b"k" * 32, b"b->a", b"a->b")).recv("run", 4096)
    other = frame_bytes({"type": "run"}, (), Seal(b"x" * 32, b"a->b", b"b->a"))
    with pytest.raises(ProtocolError, match="failed authentication"):
        Channel(BytesStream(other), "peer", seals()[1]).recv("run", 4096)


def test_sizes_are_checked_before_the_bytes_they_announce_are_read():
    huge_header = PREFIX.pack(MAGIC, 2 << 20, 0) + b"{" * 64
    with pytest.raises(LimitExceeded, match="header of 2097152 bytes"):
        Channel(BytesStream(huge_header, readable=PREFIX.size), "peer").recv("run", 1 << 20)
    text = b'{"type":"upload"}'
    huge_payload = PREFIX.pack(MAGIC, len(text), 1 << 60) + text   # allocating it would raise MemoryError
    with pytest.raises(LimitExceeded, match="limit is 1000 bytes"):
        Channel(BytesStream(huge_payload, readable=PREFIX.size + len(text)), "peer").recv("upload", 4096, 1000)
    with pytest.raises(ProtocolError, match="carries 1152921504606846976 payload bytes; 10 were announced"):
        Channel(BytesStream(huge_payload, readable=PREFIX.size + len(text)), "peer").recv(
            "upload", 4096, exact_payload=10)


@pytest.mark.parametrize("data,error,match", [
    (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", ProtocolError, "not a vdla remote message"),
    (PREFIX.pack(MAGIC, 9, 0) + b"{not json", ProtocolError, "not UTF-8 JSON"),
    (PREFIX.pack(MAGIC, 2, 0) + b"\xff\xfe", ProtocolError, "not UTF-8 JSON"),
    (PREFIX.pack(MAGIC, 7, 0) + b"[1,2,3]", ProtocolError, "without a \"type\""),
    (PREFIX.pack(MAGIC, 12, 0) + b'{"type":"x"}', ProtocolError, "'x' message where a 'run'"),
    (PREFIX.pack(MAGIC, 100, 0) + b'{"type":', RemoteConnectionError, "after 8 of the 100 bytes"),
    (b"VDR", RemoteConnectionError, "after 3 of the 16 bytes"),
    (b"", RemoteConnectionError, "closed the connection"),
])
def test_malformed_frames_raise_protocol_errors(data, error, match):
    with pytest.raises(error, match=match):
        Channel(BytesStream(data), "peer").recv("run", 4096)


def test_an_error_frame_raises_the_error_it_names():
    data = frame_bytes({"type": "error", "kind": "busy", "message": "one run at a time"})
    with pytest.raises(ServerBusy, match="one run at a time") as info:
        Channel(BytesStream(data), "peer").recv("ready", 4096)
    assert info.value.from_peer


def test_arrays_round_trip_bit_exact_in_every_listed_dtype(rng):
    arrays = {f"a{k}": (rng.standard_normal((2, 3)) * 100).astype(dtype)
              for k, dtype in enumerate(["float32", "float64", "float16", "int8", "uint8", "int32", "int64",
                                         "uint64", "bool"])}
    arrays["big_endian"] = np.arange(6, dtype=">i4").reshape(2, 3)
    arrays["empty"] = np.zeros((0, 4), np.float32)
    arrays["scalar"] = np.float32(1.5)
    specs, parts = pack(arrays)
    payload = bytearray(b"".join(bytes(p) for p in parts))
    parsed = specs_from_wire([s.to_wire() for s in specs], "test", Limits(), 1 << 20)
    assert total_bytes(parsed) == len(payload)
    back = unpack(parsed, payload, 0)
    for name, value in arrays.items():
        value = np.asarray(value)
        assert back[name].shape == value.shape and back[name].dtype == value.dtype.newbyteorder("<")
        assert np.array_equal(back[name], value)


def test_arrays_outside_the_protocol_are_refused_by_name():
    with pytest.raises(RemoteInputError, match="'x' has dtype object"):
        pack({"x": np.array([object()])})
    with pytest.raises(RemoteInputError, match="complex64"):
        pack({"x": np.zeros(2, np.complex64)})


@pytest.mark.parametrize("doc,error,match", [
    ({"name": "x", "dtype": "object", "shape": [1]}, ProtocolError, "dtype 'object'"),
    ({"name": "x", "dtype": "float32", "shape": [-1]}, ProtocolError, "non-negative"),
    ({"name": "x", "dtype": "float32", "shape": [True]}, ProtocolError, "non-negative"),
    ({"name": "x", "dtype": "float32", "shape": [1] * 33}, ProtocolError, "at most 32"),
    ({"name": "", "dtype": "float32", "shape": [1]}, ProtocolError, "name"),
    ({"name": "x", "dtype": "float32"}, ProtocolError, "expected"),
    ({"name": "x", "dtype": "float32", "shape": [1 << 40, 1 << 40]}, LimitExceeded, "the limit is"),
])
def test_array_specs_from_the_peer_are_checked(doc, error, match):
    with pytest.raises(error, match=match):
        specs_from_wire([doc], "inputs", Limits(), 1 << 20)
    with pytest.raises(ProtocolError, match="new string"):
        specs_from_wire([{"name": "x", "dtype": "int8", "shape": [1]}] * 2, "inputs", Limits(), 1 << 20)


def test_run_requests_are_checked_field_by_field():
    good = RunRequest(100, [], profile=True, repeat=2).to_wire()
    assert parse_run_request(good, Limits(), "req") == RunRequest(100, [], True, 2, None)
    for change, match in [({"artifact_bytes": True}, "artifact_bytes"), ({"artifact_bytes": "1"}, "artifact_bytes"),
                          ({"artifact_bytes": 0}, "positive"), ({"repeat": 0}, "repeat"),
                          ({"threads": 0}, "threads"), ({"profile": 1}, "profile"), ({"inputs": {}}, "list")]:
        with pytest.raises(ProtocolError, match=match):
            parse_run_request({**good, **change}, Limits(), "req")
    with pytest.raises(LimitExceeded, match="--max-artifact-mb"):
        parse_run_request({**good, "artifact_bytes": 1 << 40}, Limits(), "req")
    big = {**good, "inputs": [{"name": "x", "dtype": "float32", "shape": [1 << 20]}]}
    with pytest.raises(LimitExceeded, match="--max-input-mb"):
        parse_run_request(big, Limits(input_bytes=1 << 20), "req")


def test_addresses_and_limits():
    assert parse_address("192.168.2.99:9091") == ("192.168.2.99", 9091)
    assert parse_address("[::1]:80") == ("::1", 80)
    assert parse_address("board.local:1") == ("board.local", 1)
    for bad in ("9091", "host:", "host:0", "host:70000", "::1:80", "[::1]", "host:x"):
        with pytest.raises(ValueError, match="--remote"):
            parse_address(bad)
    with pytest.raises(ValueError, match="positive"):
        Limits(artifact_bytes=0)
    with pytest.raises(ProtocolError):
        Limits.from_wire({"header_bytes": 1})


# ---- the handshake --------------------------------------------------------------------------
def handshake(server_creds, client_creds):
    """Run both sides over a socket pair; -> (server error or None, client error or the session)."""
    a, b = socket.socketpair()
    a.settimeout(10)
    b.settimeout(10)
    server_side, client_side = Channel(SocketStream(a), "the client"), Channel(SocketStream(b), "the server")
    box = {}

    def serve():
        try:
            server_handshake(server_side, server_creds, {"limits": Limits().to_wire()})
            box["server"] = None
            server_side.send({"type": "ready"})
        except Exception as exc:
            box["server"] = exc
            if isinstance(exc, AuthenticationError):
                server_side.send_error(exc)
        finally:
            a.close()
    thread = threading.Thread(target=serve)
    thread.start()
    try:
        session = client_handshake(client_side, client_creds, 1 << 20)
        client_side.recv("ready", 4096)    # sealed under the session key on both sides
        result = session
    except Exception as exc:
        result = exc
    finally:
        b.close()
        thread.join(10)
    return box.get("server"), result


@pytest.fixture
def two_keys(tmp_path):
    generate_key_file(tmp_path / "a.key")
    generate_key_file(tmp_path / "b.key")
    return Credentials.from_key_file(tmp_path / "a.key"), Credentials.from_key_file(tmp_path / "b.key")


def test_the_same_key_authenticates_both_sides_and_seals_the_session(two_keys):
    server_error, session = handshake(two_keys[0], two_keys[0])
    assert server_error is None and session["limits"] == Limits().to_wire()


def test_a_wrong_key_is_refused_naming_both_key_ids(two_keys):
    server_error, client_error = handshake(two_keys[0], two_keys[1])
    assert isinstance(server_error, AuthenticationError) and isinstance(client_error, AuthenticationError)
    assert two_keys[0].key_id in str(client_error) and two_keys[1].key_id in str(client_error)


def test_a_server_without_the_key_cannot_prove_it(two_keys):
    """A server that forges its welcome (it lacks the client's key) is caught by the client."""
    a, b = socket.socketpair()
    b.settimeout(10)
    impostor = Channel(SocketStream(a), "the client")

    def serve():
        impostor.send({"type": "hello", "protocol": 1, "auth": "hmac-sha256", "nonce": "00" * 32})
        impostor.recv("auth", 4096)
        impostor.send({"type": "welcome", "proof": "11" * 32})
    thread = threading.Thread(target=serve)
    thread.start()
    with pytest.raises(AuthenticationError, match="did not prove"):
        client_handshake(Channel(SocketStream(b), "the server"), two_keys[0], 1 << 20)
    thread.join(10)
    a.close()
    b.close()


def test_key_and_loopback_modes_do_not_mix(two_keys):
    _, error = handshake(Credentials.loopback(), two_keys[0])
    assert isinstance(error, AuthenticationError) and "--insecure-loopback" in str(error)
    _, error = handshake(two_keys[0], Credentials.loopback())
    assert isinstance(error, AuthenticationError) and "--key-file" in str(error)
    assert handshake(Credentials.loopback(), Credentials.loopback())[0] is None


def test_a_version_mismatch_names_both_versions(two_keys):
    a, b = socket.socketpair()
    b.settimeout(10)
    Channel(SocketStream(a), "x").send({"type": "hello", "protocol": 7, "auth": "hmac-sha256", "nonce": "00" * 32})
    with pytest.raises(ProtocolError, match="version 7, this side speaks 1"):
        client_handshake(Channel(SocketStream(b), "the server"), two_keys[0], 1 << 20)
    a.close()
    b.close()


def test_prefix_layout_is_fixed():
    """16 bytes, little endian: a peer in another language can be written from the docstring."""
    assert PREFIX.size == 16 and PREFIX.pack(MAGIC, 1, 2) == b"VDR1" + struct.pack("<IQ", 1, 2)
