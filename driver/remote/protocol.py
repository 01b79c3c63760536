"""Frames: how remote execution puts messages on a byte stream. No pickle anywhere.

A frame is
    prefix: b"VDR1" | u32 header length | u64 payload length       (little endian, 16 bytes)
    header: JSON object with a string "type" (UTF-8)
    [header tag: 32 bytes]                                           (sealed channels)
    payload: raw bytes (an artifact, arrays' bytes back to back)
    [payload tag: 32 bytes]                                          (sealed channels)

The receiver checks the header length against its limit before reading the header, and the
payload length (which the header tag covers) against the limit the caller gives for the
message it expects before reading the payload.

Sealed channels (after the handshake, handshake.py) tag every frame with HMAC-SHA256 under
the session key over a direction label and a per-direction sequence number: a frame altered,
dropped, replayed, reordered or reflected back fails its tag. The header has its own tag so
that a header is authenticated before its sizes are believed. Frames are not encrypted.
"""
from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import struct
import time

from .errors import (LimitExceeded, ProtocolError, RemoteConnectionError, RemoteError, RemoteTimeout,
                     error_from_wire)
from .limits import mib

MAGIC = b"VDR1"
PREFIX = struct.Struct("<4sIQ")
TAG_BYTES = 32
_CHUNK = 1 << 20


class SocketStream:
    """A socket whose timeout is the longest wait for progress; `within(seconds)` bounds a
    whole exchange as well (a peer that trickles a byte at a time cannot stretch it)."""

    def __init__(self, sock):
        self.sock = sock
        self._deadline: float | None = None

    @contextlib.contextmanager
    def within(self, seconds: float):
        self._idle = self.sock.gettimeout()
        self._deadline = time.monotonic() + seconds
        try:
            yield
        finally:
            self._deadline = None
            self.sock.settimeout(self._idle)

    def _arm(self) -> None:
        if self._deadline is not None:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the exchange took longer than allowed")
            self.sock.settimeout(left if self._idle is None else min(self._idle, left))

    def read_into(self, view: memoryview) -> int:
        self._arm()
        return self.sock.recv_into(view)

    def write_all(self, data) -> None:
        # one sendall per chunk: a socket timeout bounds each sendall as a whole, and it is
        # meant as "no progress for that long", not "the whole upload within that long"
        view = memoryview(data).cast("B")
        for start in range(0, view.nbytes, _CHUNK):
            self._arm()
            self.sock.sendall(view[start:start + _CHUNK])

    def flush(self) -> None:
        pass


class PipeStream:
    """A child process's pipes (binary file objects)."""

    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer

    def read_into(self, view: memoryview) -> int:
        return self.reader.readinto(view) or 0

    def write_all(self, data) -> None:
        self.writer.write(data)

    def flush(self) -> None:
        self.writer.flush()


class Seal:
    """The session's tags: one key, a label per direction, a sequence number per direction."""

    def __init__(self, key: bytes, send_label: bytes, recv_label: bytes):
        self.key, self.send_label, self.recv_label = key, send_label, recv_label
        self.send_seq = self.recv_seq = 0

    def header_tag(self, label: bytes, seq: int, framed_header: bytes) -> bytes:
        return hmac.new(self.key, label + struct.pack("<Q", seq) + b"H" + framed_header, hashlib.sha256).digest()

    def payload_mac(self, label: bytes, seq: int, header_tag: bytes):
        return hmac.new(self.key, label + struct.pack("<Q", seq) + b"P" + header_tag, hashlib.sha256)


def _views(parts) -> list[memoryview]:
    views = [memoryview(p) for p in parts]
    return [v if v.format == "B" and v.ndim == 1 else v.cast("B") for v in views]


class Channel:
    """Sends and receives frames on a stream; `peer` names the other side in messages."""

    def __init__(self, stream, peer: str, seal: Seal | None = None):
        self.stream, self.peer, self.seal = stream, peer, seal

    # ---- sending ----------------------------------------------------------------------------
    def send(self, header: dict, parts=()) -> None:
        text = json.dumps(header, separators=(",", ":")).encode()
        views = _views(parts)
        framed = PREFIX.pack(MAGIC, len(text), sum(v.nbytes for v in views)) + text
        try:
            if self.seal is None:
                self.stream.write_all(framed)
                for v in views:
                    self.stream.write_all(v)
            else:
                seal = self.seal
                tag = seal.header_tag(seal.send_label, seal.send_seq, framed)
                self.stream.write_all(framed + tag)
                mac = seal.payload_mac(seal.send_label, seal.send_seq, tag)
                for v in views:
                    self.stream.write_all(v)
                    mac.update(v)
                self.stream.write_all(mac.digest())
                seal.send_seq += 1
            self.stream.flush()
        except TimeoutError:
            raise RemoteTimeout(f"{self.peer} stopped reading while the {header.get('type')!r} message was "
                                "being sent") from None
        except OSError as exc:
            raise RemoteConnectionError(f"the connection to {self.peer} broke while sending a "
                                        f"{header.get('type')} message ({exc.strerror or exc})") from None

    def send_error(self, error: RemoteError) -> None:
        self.send({"type": "error", "kind": error.kind, "message": str(error)})

    # ---- receiving --------------------------------------------------------------------------
    def recv(self, expect: str, max_header: int, max_payload: int = 0,
             exact_payload: int | None = None) -> tuple[dict, bytearray]:
        """The next frame, which must be of type `expect` (an error frame raises the error it
        names). Its payload must be `exact_payload` bytes if given, else at most `max_payload`."""
        prefix = self._read(PREFIX.size, f"the {expect!r} message", first=True)
        magic, header_len, payload_len = PREFIX.unpack(prefix)
        if magic != MAGIC:
            raise ProtocolError(f"{self.peer} sent bytes that are not a vdla remote message (they start "
                                f"{bytes(prefix[:8])!r}, a message starts {MAGIC!r})")
        if header_len > max_header:
            raise LimitExceeded(f"{self.peer} announced a message header of {mib(header_len)}; "
                                f"the limit is {mib(max_header)}")
        text = self._read(header_len, f"the header of the {expect!r} message")
        seal = self.seal
        if seal is not None:
            tag = self._read(TAG_BYTES, f"the tag of the {expect!r} message")
            if not hmac.compare_digest(seal.header_tag(seal.recv_label, seal.recv_seq, bytes(prefix + text)), tag):
                raise ProtocolError(f"a message from {self.peer} failed authentication: it was altered, "
                                    "replayed or spliced in transit")
        header = _parse_header(text, self.peer, expect)
        kind = header["type"]
        if kind == "error":
            payload_limit = 0
        elif kind != expect:
            raise ProtocolError(f"{self.peer} sent a {kind!r} message where a {expect!r} message was expected")
        elif exact_payload is not None:
            if payload_len != exact_payload:
                raise ProtocolError(f"{self.peer}'s {kind} message carries {payload_len} payload bytes; "
                                    f"{exact_payload} were announced")
            payload_limit = exact_payload
        else:
            payload_limit = max_payload
        if payload_len > payload_limit:
            raise LimitExceeded(f"{self.peer}'s {kind} message carries {mib(payload_len)} of payload; the "
                                f"limit is {mib(payload_limit)}")
        try:
            payload = bytearray(payload_len)
        except MemoryError:
            raise LimitExceeded(f"{self.peer}'s {kind} message carries {mib(payload_len)} of payload, more than "
                                "this machine can allocate now") from None
        self._read_into(memoryview(payload), f"the payload of the {kind!r} message")
        if seal is not None:
            mac = seal.payload_mac(seal.recv_label, seal.recv_seq, bytes(tag))
            mac.update(payload)
            if not hmac.compare_digest(mac.digest(), self._read(TAG_BYTES, f"the tag of the {kind!r} message")):
                raise ProtocolError(f"the payload of the {kind!r} message from {self.peer} failed authentication: "
                                    "it was altered in transit")
            seal.recv_seq += 1
        if kind == "error":
            raise error_from_wire(header.get("kind"), header.get("message"))
        return header, payload

    def _read(self, n: int, what: str, first: bool = False) -> bytearray:
        buf = bytearray(n)
        self._read_into(memoryview(buf), what, first)
        return buf

    def _read_into(self, view: memoryview, what: str, first: bool = False) -> None:
        got, total = 0, view.nbytes
        try:
            while got < total:
                n = self.stream.read_into(view[got:got + _CHUNK])
                if not n:
                    if first and got == 0:
                        raise RemoteConnectionError(f"{self.peer} closed the connection (waiting for {what})")
                    raise RemoteConnectionError(f"{self.peer} closed the connection after {got} of the {total} "
                                                f"bytes of {what}")
                got += n
        except TimeoutError:
            raise RemoteTimeout(f"{self.peer} sent nothing for too long while {what} was expected "
                                f"({got} of {total} bytes arrived)") from None
        except OSError as exc:
            raise RemoteConnectionError(f"the connection to {self.peer} broke while reading {what} "
                                        f"({exc.strerror or exc})") from None


def _parse_header(text: bytearray, peer: str, expect: str) -> dict:
    try:
        header = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:   # (nesting past the JSON reader's depth)
        raise ProtocolError(f"{peer} sent a message header that is not UTF-8 JSON ({exc}) where a {expect!r} "
                            "message was expected") from None
    if not isinstance(header, dict) or not isinstance(header.get("type"), str):
        raise ProtocolError(f"{peer} sent a message header without a \"type\" string where a {expect!r} "
                            "message was expected")
    return header


def field(header: dict, name: str, kind, what: str):
    """header[name], which must be of Python type `kind` (bool is not an int here)."""
    value = header.get(name)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        want = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
        raise ProtocolError(f"{what}: field {name!r} must be {want}, got {value!r}")
    return value
