"""The header of a Xilinx .bit file: design name, part, date, time, then the configuration data.

Vivado writes the design field as `name;UserID=0X1A2B3C4D;Version=2023.2`; the UserID is the
bitstream's BITSTREAM.CONFIG.USERID, which the VDLA build sets to the config hash (the value
of the hardware ID register), so a bitstream names the ISA instance it implements before it
is loaded. 0xFFFFFFFF is Vivado's "not set".

Layout: a 2-byte big-endian length and that many bytes of sync pattern, a 2-byte field,
then tagged fields: 'a' design, 'b' part, 'c' date, 'd' time (each a 2-byte length and a
NUL-terminated string), and 'e', a 4-byte length and the data, which runs to the end.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from .device import DeviceError

_SYNC = bytes.fromhex("0ff00ff00ff00ff000")
_TEXT_FIELDS = {b"a": "design", b"b": "part", b"c": "date", b"d": "time"}
USER_ID_UNSET = 0xFFFFFFFF


class BitfileError(DeviceError):
    """A file that is not a well-formed .bit file."""


@dataclass(frozen=True)
class BitHeader:
    design: str        # the whole design field, e.g. "vdla_wrapper;UserID=0X1A2B3C4D;Version=2023.2"
    part: str
    date: str
    time: str
    data: bytes

    @property
    def user_id(self) -> int | None:
        """The UserID the design field carries, None when absent or unset."""
        for item in self.design.split(";"):
            key, _, value = item.partition("=")
            if key.strip().lower() == "userid":
                try:
                    number = int(value.strip(), 16)
                except ValueError:
                    return None
                return None if number == USER_ID_UNSET else number
        return None


def read_bit(raw: bytes, name: str = "bitstream") -> BitHeader:
    """Parse a .bit file's header; BitfileError naming `name` and the byte where it breaks."""
    def need(at: int, count: int, what: str) -> bytes:
        if at + count > len(raw):
            raise BitfileError(f"{name}: not a .bit file: {what} at byte {at} runs past the end "
                               f"({len(raw)} bytes)")
        return raw[at:at + count]

    (length,) = struct.unpack(">H", need(0, 2, "the sync field's length"))
    if need(2, length, "the sync field") != _SYNC:
        raise BitfileError(f"{name}: not a .bit file: it does not start with the Xilinx sync field")
    at = 2 + length + 2          # the sync field, then a 2-byte field (always 1)
    fields: dict[str, str] = {}
    while True:
        tag = need(at, 1, "a field tag")
        at += 1
        if tag == b"e":
            (count,) = struct.unpack(">I", need(at, 4, "the data length"))
            at += 4
            if at + count != len(raw):
                raise BitfileError(f"{name}: the data field says {count} bytes but {len(raw) - at} follow it")
            return BitHeader(fields.get("design", ""), fields.get("part", ""), fields.get("date", ""),
                             fields.get("time", ""), raw[at:])
        if tag not in _TEXT_FIELDS:
            raise BitfileError(f"{name}: not a .bit file: unknown field tag {tag!r} at byte {at - 1}")
        (count,) = struct.unpack(">H", need(at, 2, f"the length of field {tag.decode()}"))
        text = need(at + 2, count, f"field {tag.decode()}")
        fields[_TEXT_FIELDS[tag]] = text.rstrip(b"\0").decode("ascii", errors="replace")
        at += 2 + count


def write_bit(design: str, part: str, data: bytes, date: str = "2000/01/01", time: str = "00:00:00") -> bytes:
    """A .bit file with these header fields around `data` (which the reader returns as is)."""
    out = [struct.pack(">H", len(_SYNC)), _SYNC, struct.pack(">H", 1)]
    for tag, text in ((b"a", design), (b"b", part), (b"c", date), (b"d", time)):
        encoded = text.encode("ascii") + b"\0"
        out += [tag, struct.pack(">H", len(encoded)), encoded]
    out += [b"e", struct.pack(">I", len(data)), data]
    return b"".join(out)
