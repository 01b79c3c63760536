"""The host side: run an artifact on a board that runs `vdla serve`.

    runner = RemoteRunner("192.168.2.99", 9091, "~/.vdla/host.key", server_key="~/.vdla/board.key.pub")
    outputs, profile = runner.run("model.vdla", {"input": x}, profile=True)

Each run is one connection (server.py has the exchange). Sizes are checked against the
limits the server announced before anything is uploaded, so an oversized artifact is refused
here with the server's limit in the message; the server checks again.
"""
from __future__ import annotations

import contextlib
import os
import socket

from ..artifact_errors import ArtifactError
from .address import format_address, is_loopback
from .arrays import pack
from .errors import AuthenticationError, ProtocolError, RemoteConnectionError, RemoteError, RemoteTimeout
from . import tls
from .handshake import AUTH_ED25519, Credentials, client_handshake
from .limits import Limits
from .protocol import Channel, SocketStream, field
from .run_request import RunRequest
from .run_result import RemoteResult, result_from_wire

DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_IO_TIMEOUT_S = 60.0      # no progress for this long while sending or receiving
RESULT_GRACE_S = 60.0            # waited past the server's run timeout for its answer


class RemoteRunner:
    """Runs artifacts on the `vdla serve` at host:port. `key_file`: this host's Ed25519 private
    key (`vdla keygen -o FILE`; the server lists FILE.pub as a --client-key), with `server_key`
    the server's public key (pinned: TLS to any other key is refused); or a legacy shared secret
    (the same bytes on both sides, authenticated, not encrypted). `insecure_loopback=True`
    instead talks to a server started with --insecure-loopback, on a loopback address only.
    `limits` bound what this side accepts."""

    def __init__(self, host: str, port: int, key_file=None, *, server_key=None, insecure_loopback: bool = False,
                 connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S, io_timeout_s: float = DEFAULT_IO_TIMEOUT_S,
                 limits: Limits | None = None):
        if insecure_loopback:
            if key_file is not None or server_key is not None:
                raise ValueError("choose key_file (--key-file) or insecure_loopback (--insecure-loopback), not both")
            if not is_loopback(host):
                raise ValueError(f"insecure loopback mode talks to 127.0.0.1 or ::1 only, not {host!r}; use a key "
                                 "file for a board")
            self.credentials = Credentials.loopback()
        elif key_file is None:
            raise AuthenticationError("a remote run needs this host's key (--key-file FILE / key_file=, from `vdla "
                                      "keygen -o FILE`) and the server's public key (--server-key / server_key=), or "
                                      "--insecure-loopback for a server on this machine started with it")
        else:
            self.credentials = Credentials.from_key_file(key_file, () if server_key is None else (server_key,),
                                                         "--server-key")
        self.host, self.port = host, int(port)
        self.connect_timeout_s, self.io_timeout_s = connect_timeout_s, io_timeout_s
        self.limits = limits or Limits()

    @property
    def address(self) -> str:
        return format_address(self.host, self.port)

    def run(self, artifact, inputs: dict, profile: bool = False) -> tuple[dict, list | None]:
        """(outputs, profile): the outputs by name, and with profile=True the per-layer rows
        (vdla.driver.profile.LayerProfile) measured on the server, else None."""
        result = self.run_detailed(artifact, inputs, profile=profile)
        return result.outputs, result.profile

    def run_detailed(self, artifact, inputs: dict, profile: bool = False, repeat: int = 1,
                     threads: int | None = None) -> RemoteResult:
        """`artifact`: a path or the bytes of a .vdla file; `inputs`: every input of the model
        by name. `repeat` runs are timed on the server (RemoteResult.times_s)."""
        data = read_artifact(artifact)
        specs, parts = pack(inputs)
        request = RunRequest(len(data), specs, bool(profile), int(repeat), threads)
        with contextlib.ExitStack() as stack:
            sock, binding = self._connect(stack)
            channel = Channel(SocketStream(sock), f"vdla serve at {self.address}")
            session = client_handshake(channel, self.credentials, self.limits.header_bytes, binding)
            request.check(Limits.from_wire(session.get("limits")), f"the server at {self.address}")
            run_timeout_s = field(session, "run_timeout_s", (int, float), f"{channel.peer}'s session")
            if not 0 < run_timeout_s < 1e9:        # a socket timeout must be a finite number
                raise ProtocolError(f"{channel.peer}'s session gives run_timeout_s {run_timeout_s}; expected a "
                                    "positive number of seconds")
            channel.send(request.to_wire())
            channel.recv("ready", self.limits.header_bytes)
            channel.send({"type": "upload"}, [data, *parts])
            sock.settimeout(run_timeout_s + RESULT_GRACE_S)   # the server answers by its timeout
            try:
                reply, payload = channel.recv("result", self.limits.header_bytes, self.limits.output_bytes)
            except RemoteTimeout as exc:
                if exc.from_peer:      # the server's own run timeout, in its words
                    raise
                raise RemoteTimeout(f"{channel.peer} did not answer within {run_timeout_s + RESULT_GRACE_S:g} s, "
                                    f"{RESULT_GRACE_S:g} s past its own run timeout") from None
            return result_from_wire(reply, payload, self.limits, channel.peer)

    def _connect(self, stack: contextlib.ExitStack) -> tuple[socket.socket, bytes]:
        """(the socket to talk on, the channel binding): with Ed25519 keys the TLS socket, whose
        server key is the pinned one, and its certificate's digest; else the plain one and b""."""
        sock = stack.enter_context(self._open())
        if self.credentials.mode != AUTH_ED25519:
            return sock, b""
        peer = f"vdla serve at {self.address}"
        io = stack.enter_context(tls.wrap(tls.client_context(), sock, server_side=False))
        tls.handshake_within(io, sock, self.connect_timeout_s, peer)
        return io, tls.peer_key(io, self.credentials.peers, peer)

    def _open(self) -> socket.socket:
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.connect_timeout_s)
        except socket.gaierror as exc:
            raise RemoteConnectionError(f"cannot resolve host {self.host!r}: {exc.strerror}") from None
        except TimeoutError:
            raise RemoteConnectionError(f"cannot connect to {self.address}: no answer within "
                                        f"{self.connect_timeout_s:g} s") from None
        except OSError as exc:
            raise RemoteConnectionError(f"cannot connect to {self.address}: {exc.strerror or exc} (is `vdla serve` "
                                        "running there, on that port?)") from None
        sock.settimeout(self.io_timeout_s)
        return sock


def read_artifact(artifact) -> bytes:
    """The bytes of a .vdla file (a path), or the bytes given."""
    if isinstance(artifact, (bytes, bytearray, memoryview)):
        return bytes(artifact)
    path = os.fspath(artifact)
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as exc:
        raise ArtifactError(f"{path}: cannot read the artifact ({exc.strerror})") from None
