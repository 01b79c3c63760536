"""A server under hostile clients for the remote tests (test_server.py: the shared-secret
server, test_tls.py: the TLS one): each kind of client runs in a loop on a thread of its own,
reconnecting as fast as it is cut, while a good client must be served three times, each within
30 s of retries (a connection cut by a newer one, or a busy answer, is retried at once)."""
from __future__ import annotations

import socket
import threading
import time

from vdla.driver.remote import RemoteConnectionError, ServerBusy

ATTEMPTS_S = 30
# the first bytes of a TLS ClientHello record: a TLS server waits for the rest
CLIENT_HELLO_START = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"


def silent(stop: threading.Event, first: bytes = b""):
    """A client that connects, sends `first` (garbage, say), then says nothing until cut."""
    def client(port):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(first)
            while not stop.is_set() and sock.recv(4096):
                pass
    return client


def trickling(stop: threading.Event, data: bytes, every_s: float = 0.1):
    """A client that sends `data` a byte at a time until cut."""
    def client(port):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            for byte in data:
                if stop.is_set():
                    return
                sock.sendall(bytes([byte]))
                time.sleep(every_s)
    return client


def served_while_attacked(port: int, kinds, serve, stop: threading.Event) -> None:
    """`kinds`: functions of the port, one thread each; `serve()`: one good run, which raises
    when its result is wrong; `stop` ends the hostile loops (set here at the end)."""
    def hostile(kind):
        while not stop.is_set():
            try:
                kind(port)
            except Exception:
                pass
    threads = [threading.Thread(target=hostile, args=(k,), daemon=True) for k in kinds]
    for t in threads:
        t.start()
    try:
        time.sleep(0.5)                 # let them take every connection
        for _ in range(3):
            started = time.monotonic()
            while True:
                try:
                    serve()
                    break
                except (ServerBusy, RemoteConnectionError):
                    assert time.monotonic() - started < ATTEMPTS_S
            assert time.monotonic() - started < ATTEMPTS_S
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)
