"""The server's open connections, and who gives way when they are too many.

A connection counts from accept to close. Until its client has authenticated it can be anyone:
when every slot is taken, the oldest such connection is cut (its socket shut down, so its
thread's next read fails and the connection ends) to admit the new one. Only when every open
connection is authenticated is a new client told busy. So clients that connect and stall, however
many and however often they come back, cannot keep a key holder out: a good client authenticates
in milliseconds, and to cut it an attacker must connect faster than that, each time.
"""
from __future__ import annotations

import socket
import threading
import time


class ConnectionTable:
    def __init__(self, limit: int):
        self.limit = limit
        self._lock = threading.Lock()
        self._open: dict[socket.socket, tuple[float, bool]] = {}    # socket -> (accepted at, authenticated)

    def admit(self, conn: socket.socket) -> bool:
        """Take a slot for `conn`, cutting the oldest unauthenticated connection if there is no
        free one; False when every open connection is authenticated (the client is busy-ed)."""
        with self._lock:
            if len(self._open) >= self.limit:
                waiting = [(at, c) for c, (at, authenticated) in self._open.items() if not authenticated]
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
