"""`vdla serve`: runs artifacts that authenticated clients upload, on this machine's device.

One connection, one run:
    [TLS, with Ed25519 keys: tls.py] handshake (handshake.py) -> client: run {artifact size, input specs, options}
    -> server: ready, or an error (too large, busy, malformed): nothing uploaded yet
    -> client: upload (artifact, then the inputs' bytes) -> server: result or error

Every size is checked before the bytes it announces are read (limits.py). The artifact is
verified against the server's trust policy here, before any of it reaches the worker process
that runs it: the session key says who the client is, the trust policy what code may run. One
run at a time: the run slot is taken when a request is accepted and a second client is told
"busy" before it uploads. Runs happen in a worker process (worker.py) that is killed at the
run timeout, which frees the device. Each connection has its own thread, with an idle timeout
on every read and a deadline for every phase as a whole: the handshake and run request together,
the upload and the result each at a minimum average rate, the drain after an error. The number
of open connections is bounded, and a connection that has not authenticated within a grace
gives way to a new one when they are too many (connections.py), so neither a slow nor a silent nor an
unauthenticated client, nor a key holder that trickles, holds the server; any failure of one
connection ends that connection only.
"""
from __future__ import annotations

import logging
import math
import socket
import threading
import time

from ..artifact import verify
from ..artifact_errors import ArtifactError
from ..artifact_trust import TrustPolicy
from ..devices import device_kind
from . import defaults
from .address import format_address, is_loopback
from .connections import ConnectionTable
from .errors import (ArtifactRefused, AuthenticationError, RemoteConnectionError, RemoteError, ServerBusy)
from . import tls
from .handshake import AUTH_ED25519, Credentials, server_handshake
from .limits import Limits
from .protocol import Channel, SocketStream
from .run_request import parse_run_request
from .worker_process import WorkerProcess

log = logging.getLogger("vdla.driver.remote")


class RemoteServer:
    """Serve runs on `device` ("sim", "rtl" or "pynq") at host:port (port 0: any free port,
    see `.port`). `key_file` is the server's Ed25519 private key (`vdla keygen -o FILE`), with
    `client_keys` the public keys of the clients it serves (TLS, handshake.py); or a legacy shared
    secret (`vdla keygen --secret`, authenticated, not encrypted); `insecure_loopback=True`
    instead runs without one, on a loopback address only. `trust_policy` decides which
    artifacts run (TrustPolicy(): any, as an artifact is code that every key holder may run)."""

    def __init__(self, host: str = "127.0.0.1", port: int = defaults.PORT, key_file=None, device: str = "sim",
                 client_keys=(),
                 trust_policy: TrustPolicy | None = None, timeout_s: float = defaults.RUN_TIMEOUT_S,
                 limits: Limits | None = None, insecure_loopback: bool = False,
                 idle_timeout_s: float = defaults.IDLE_TIMEOUT_S, max_connections: int = defaults.MAX_CONNECTIONS,
                 handshake_timeout_s: float = defaults.HANDSHAKE_TIMEOUT_S,
                 min_transfer_bytes_per_s: float = defaults.MIN_TRANSFER_BYTES_PER_S):
        device_kind(device)     # an unknown one is refused with the list
        if not all(0 < x < math.inf for x in (timeout_s, idle_timeout_s, handshake_timeout_s,
                                              min_transfer_bytes_per_s)) or max_connections < 1:
            raise ValueError("the run, idle and handshake timeouts and the minimum transfer rate must be positive "
                             "finite numbers and max_connections at least 1")
        if insecure_loopback:
            if key_file is not None or client_keys:
                raise ValueError("choose --key-file or --insecure-loopback, not both")
            if not is_loopback(host):
                raise ValueError(f"--insecure-loopback is refused on host {host!r}: without a key, serve only on "
                                 "a loopback address (127.0.0.1 or ::1); on a network use --key-file")
            self.credentials = Credentials.loopback()
        elif key_file is None:
            raise AuthenticationError("vdla serve needs --key-file FILE (its own key from `vdla keygen -o FILE`) and "
                                      "--client-key HOST.pub for each host it serves, or --insecure-loopback on "
                                      "127.0.0.1 for local tests")
        else:
            self.credentials = Credentials.from_key_file(key_file, client_keys, "--client-key")
        # (TLS context, its certificate's digest) with Ed25519 keys; None: plain TCP
        self._tls = tls.server_context(self.credentials.private) if self.credentials.mode == AUTH_ED25519 else None
        self.host, self.port, self.device = host, port, device
        self.trust_policy = trust_policy if trust_policy is not None else TrustPolicy()
        self.timeout_s, self.idle_timeout_s = float(timeout_s), float(idle_timeout_s)
        self.handshake_timeout_s = float(handshake_timeout_s)
        self.min_transfer_bytes_per_s = float(min_transfer_bytes_per_s)
        self.limits = limits or Limits.for_memory()
        self.max_connections = max_connections
        self.worker = WorkerProcess(device, self.limits)
        self._run_slot = threading.Lock()
        # a new client may cut one still authenticating, once it has had its grace (connections.py)
        self.cut_grace_s = min(defaults.CUT_GRACE_S, self.handshake_timeout_s / 2)
        self._connections = ConnectionTable(max_connections, self.cut_grace_s)
        self._turning_away = threading.BoundedSemaphore(2 * max_connections)   # busy answers in flight
        self._sock: socket.socket | None = None
        self._closing = threading.Event()
        self._thread: threading.Thread | None = None

    # ---- life cycle ---------------------------------------------------------------------------
    def start(self) -> "RemoteServer":
        """Start the worker (its device is opened once: an unusable device fails here), listen,
        and accept connections on a background thread. Starting a started server does nothing."""
        if self._thread is not None:
            return self
        self.worker.start()
        try:
            family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
            self._sock = socket.create_server((self.host, self.port), family=family, backlog=16)
        except OSError as exc:
            self.worker.close()
            raise RemoteConnectionError(f"cannot listen on {format_address(self.host, self.port)}: "
                                        f"{exc.strerror or exc}") from None
        self._sock.settimeout(0.25)   # accept() wakes up to notice close()
        self.port = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._accept_loop, name="vdla serve accept", daemon=True)
        self._thread.start()
        return self

    @property
    def address(self) -> str:
        return format_address(self.host, self.port)

    def serve_forever(self) -> None:
        self._closing.wait()

    def close(self) -> None:
        self._closing.set()
        if self._thread is not None:
            self._thread.join()
        if self._sock is not None:
            self._sock.close()
        self.worker.close()

    def __enter__(self) -> "RemoteServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- connections --------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        while not self._closing.is_set():
            try:
                conn, addr = self._sock.accept()
            except TimeoutError:
                continue
            except OSError as exc:
                if not self._closing.is_set():
                    log.warning("accept failed: %s", exc)
                continue
            peer = f"client {format_address(addr[0], addr[1])}"
            if not self._connections.admit(conn):
                if self._turning_away.acquire(blocking=False):
                    threading.Thread(target=self._turn_away, args=(conn, peer), daemon=True).start()
                else:
                    conn.close()         # a flood: not even a busy answer
                continue
            threading.Thread(target=self._serve_connection, args=(conn, peer),
                             name=f"vdla serve {peer}", daemon=True).start()

    def _turn_away(self, conn: socket.socket, peer: str) -> None:
        conn.settimeout(5.0)
        io = conn
        try:
            io = self._secure(conn, peer, 5.0)
            who = "all of them authenticated clients" if self._connections.all_authenticated() else \
                f"authenticated clients or clients in their first {self.cut_grace_s:g} s"
            Channel(SocketStream(io), "the client").send_error(ServerBusy(
                f"the server has {self.max_connections} connections open, {who}; try again shortly"))
        except (RemoteError, OSError):
            pass
        finally:
            if io is not conn:
                io.close()
            conn.close()
            self._turning_away.release()

    def _secure(self, conn: socket.socket, peer: str, seconds: float):
        """The socket to talk on: `conn` itself, or with Ed25519 keys its TLS twin once the TLS
        handshake is done (within `seconds` in all)."""
        if self._tls is None:
            return conn
        io = tls.wrap(self._tls[0], conn, server_side=True)
        try:
            tls.handshake_within(io, conn, seconds, peer)
        except BaseException:
            io.close()
            raise
        return io

    def _transfer_s(self, nbytes: int) -> float:
        """The deadline for moving `nbytes` (an upload, a result): a handshake's time plus the
        bytes at the minimum rate."""
        return self.handshake_timeout_s + nbytes / self.min_transfer_bytes_per_s

    def _serve_connection(self, conn: socket.socket, peer: str) -> None:
        conn.settimeout(self.idle_timeout_s)
        started = time.monotonic()
        try:
            io = self._secure(conn, peer, self.handshake_timeout_s)
        except RemoteError as exc:        # a failed TLS handshake: nothing can be said in the clear
            log.info("%s: %s", peer, exc)
            conn.close()
            self._connections.release(conn)
            return
        stream = SocketStream(io)
        channel = Channel(stream, "the client")
        holding_slot = False
        try:
            # the TLS handshake counts too: a trickled handshake or request ends here
            with stream.within(max(self.handshake_timeout_s - (time.monotonic() - started), 0.001)):
                server_handshake(channel, self.credentials, {"device": self.device, "limits": self.limits.to_wire(),
                                                             "run_timeout_s": self.timeout_s},
                                 self._tls[1] if self._tls else b"")
                self._connections.authenticated(conn)
                header, _ = channel.recv("run", self.limits.header_bytes)
            request = parse_run_request(header, self.limits, "the client's run request")
            if not self._run_slot.acquire(blocking=False):
                raise ServerBusy("the server is running another client's model (one run at a time); try again "
                                 "when it is done")
            holding_slot = True
            channel.send({"type": "ready"})
            with stream.within(self._transfer_s(request.payload_bytes)):
                _, payload = channel.recv("upload", self.limits.header_bytes, exact_payload=request.payload_bytes)
            artifact = memoryview(payload)[:request.artifact_bytes]    # checked in place: no copy
            try:
                verify(artifact, self.trust_policy, source="the uploaded artifact", keep_params=False)
            except ArtifactError as exc:
                raise ArtifactRefused(f"the server refused the artifact: {exc}") from None
            parts = [artifact, memoryview(payload)[request.artifact_bytes:]]
            del artifact, payload         # the list holds the upload now, and the worker handle empties it once
            reply, result = self.worker.run(request.to_wire(), parts, self.timeout_s)    # sent: freed before the result
            with stream.within(self._transfer_s(memoryview(result).nbytes)):
                channel.send(reply, [result])
            log.info("%s: ran %d-byte artifact on %s in %s", peer, request.artifact_bytes, self.device,
                     ", ".join(f"{t * 1e3:.1f} ms" for t in reply.get("times_s", [])))
        except RemoteConnectionError as exc:
            log.info("%s: %s", peer, exc)
        except RemoteError as exc:
            log.warning("%s: %s", peer, exc)
            self._answer_error(conn, stream, channel, exc)
        except Exception as exc:   # a defect here must end this connection only, with a message
            log.exception("%s: internal error", peer)
            self._answer_error(conn, stream, channel,
                               RemoteError(f"internal server error: {type(exc).__name__}: {exc}"))
        finally:
            if holding_slot:
                self._run_slot.release()
            if io is not conn:
                io.close()
            conn.close()
            self._connections.release(conn)

    @staticmethod
    def _answer_error(conn: socket.socket, stream: SocketStream, channel: Channel, error: RemoteError,
                      drain_bytes: int = 1 << 20) -> None:
        """Send the error, then read (and drop) what the client still sends, briefly and for a
        bounded time in all: closing a socket with unread bytes resets the connection, and a
        reset can destroy the answer before the client reads it."""
        try:
            with stream.within(defaults.ERROR_DRAIN_S):
                channel.send_error(error)
                conn.shutdown(socket.SHUT_WR)
                view = memoryview(bytearray(65536))
                while drain_bytes > 0:
                    got = stream.read_into(view[:min(drain_bytes, len(view))])
                    if not got:
                        break
                    drain_bytes -= got
        except (RemoteError, OSError):
            pass   # the client is gone, or took too long: nobody to tell
