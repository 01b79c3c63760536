"""HOST:PORT on the command line, and which hosts count as this machine (loopback)."""
from __future__ import annotations

import ipaddress


def parse_address(text: str, flag: str = "--remote") -> tuple[str, int]:
    """"HOST:PORT" or "[IPV6]:PORT" -> (host, port); ValueError naming the flag otherwise."""
    if text.startswith("["):
        host, sep, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, sep, port = text.rpartition(":")
        if ":" in host:
            raise ValueError(f"{flag} {text!r}: write an IPv6 address in brackets, [ADDRESS]:PORT")
    if not host or not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{flag} {text!r}: expected HOST:PORT with a port from 1 to 65535 (e.g. 192.168.2.99:9091)")
    return host, int(port)


def is_loopback(host: str) -> bool:
    """True for a literal loopback address (127.0.0.0/8, ::1); names are not resolved, so
    "localhost" pointing elsewhere cannot widen the insecure mode."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
