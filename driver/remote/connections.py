"""The server's open connections, and who gives way when they are too many.

A connection counts from accept to close. Until its client has authenticated it can be anyone:
when every slot is taken, the oldest such connection that has had its grace (`grace_s` since
accept) is cut (its socket shut down, so its thread's next read fails and the connection ends)
to admit the new one. When every open connection is authenticated or still in its grace, a new
client is told busy. So clients that connect and stall, however many and however often they
come back, cannot keep a key holder out: once admitted, a good client has the grace to
authenticate (a TLS handshake and a signature take milliseconds, more on a loaded board), and
slots held longer than that go to whoever connects next, a key holder among them.
"""
from __future__ import annotations

import socket
import threading
import time


class ConnectionTable:
    def __init__(self, limit: int, grace_s: float = 0.0):
        self.limit, self.grace_s = limit, grace_s
        self._lock = threading.Lock()
        self._open: dict[socket.socket, tuple[float, bool]] = {}    # socket -> (accepted at, authenticated)

    def admit(self, conn: socket.socket) -> bool:
        """Take a slot for `conn`, cutting the oldest unauthenticated connection past its grace if
        there is no free one; False when every open connection is authenticated or in its grace
        (the client is busy-ed)."""
        with self._lock:
            if len(self._open) >= self.limit:
                now = time.monotonic()
                waiting = [(at, c) for c, (at, authenticated) in self._open.items()
                           if not authenticated and now - at >= self.grace_s]
                if not waiting:
                    return False
                _, oldest = min(waiting, key=lambda item: item[0])
                del self._open[oldest]
                _cut(oldest)
            self._open[conn] = (time.monotonic(), False)
            return True

    def authenticated(self, conn: socket.socket) -> None:
        with self._lock:
            if conn in self._open:
                self._open[conn] = (self._open[conn][0], True)

    def all_authenticated(self) -> bool:
        with self._lock:
            return all(authenticated for _, authenticated in self._open.values())

    def release(self, conn: socket.socket) -> None:
        with self._lock:
            self._open.pop(conn, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._open)


def _cut(conn: socket.socket) -> None:
    try:
        conn.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass                     # already gone
