"""The server's connection table (vdla.driver.remote.connections): beyond the limit the oldest
connection still authenticating is cut (its socket shut down) to admit the new one; an
authenticated connection is never cut, and when all are, the new client is refused."""
import socket
import time

from vdla.driver.remote.connections import ConnectionTable


def _pair():
    a, b = socket.socketpair()
    a.settimeout(5)
    b.settimeout(5)
    return a, b


def test_the_oldest_unauthenticated_connection_gives_way():
    table = ConnectionTable(2)
    (s1, p1), (s2, p2), (s3, p3) = _pair(), _pair(), _pair()
    assert table.admit(s1) and table.admit(s2)
    table.authenticated(s1)
    assert table.admit(s3)                  # s2, the one still authenticating, was cut
    assert p2.recv(1) == b"" and len(table) == 2
    p1.sendall(b"k")
    assert s1.recv(1) == b"k"               # the authenticated one is untouched
    for s in (s1, s2, s3, p1, p2, p3):
        s.close()


def test_a_connection_in_its_grace_is_not_cut():
    table = ConnectionTable(1, grace_s=0.3)
    (s1, p1), (s2, p2), (s3, p3) = _pair(), _pair(), _pair()
    assert table.admit(s1)
    assert not table.admit(s2) and not table.all_authenticated()    # s1 still has its grace
    time.sleep(0.3)
    assert table.admit(s3)                  # now s1 gives way
    assert p1.recv(1) == b"" and len(table) == 1
    for s in (s1, s2, s3, p1, p2, p3):
        s.close()


def test_when_every_connection_is_authenticated_a_new_one_is_refused_until_one_closes():
    table = ConnectionTable(1)
    (s1, p1), (s2, p2) = _pair(), _pair()
    assert table.admit(s1)
    table.authenticated(s1)
    assert not table.admit(s2) and table.all_authenticated()
    table.release(s1)
    assert table.admit(s2) and len(table) == 1
    for s in (s1, s2, p1, p2):
        s.close()
