"""The .bit header reader and writer (vdla.driver.bitfile): fields, the UserID a Vivado build
writes into the design field, and malformed files refused with the byte where they break."""
import pytest

from vdla.driver.bitfile import BitfileError, read_bit, write_bit


def test_round_trip_and_user_id():
    raw = write_bit("vdla_wrapper;UserID=0X86EA070D;Version=2023.2", "7z020clg400-1", b"\x00\x01\x02\x03" * 8)
    header = read_bit(raw)
    assert header.part == "7z020clg400-1" and header.data == b"\x00\x01\x02\x03" * 8
    assert header.user_id == 0x86EA070D


@pytest.mark.parametrize("design, expected", [
    ("vdla_wrapper;UserID=0XFFFFFFFF;Version=2023.2", None),   # Vivado's "not set"
    ("vdla_wrapper;Version=2023.2", None),
    ("vdla_wrapper;UserID=zz;Version=2023.2", None),
    ("vdla_wrapper;userid=0x1234", 0x1234),
])
def test_user_id_absent_unset_or_odd(design, expected):
    assert read_bit(write_bit(design, "p", b"")).user_id == expected


@pytest.mark.parametrize("raw, match", [
    (b"", "sync field's length .* runs past the end"),
    (b"\x00\x09" + b"\x00" * 9 + b"\x00\x01", "does not start with the Xilinx sync field"),
    (write_bit("d", "p", b"abcd")[:-1], "data field says 4 bytes but 3 follow"),
    (write_bit("d", "p", b"abcd").replace(b"b\x00\x02p\x00", b"z\x00\x02p\x00"), "unknown field tag b'z'"),
    (write_bit("d", "p", b"")[:16], "runs past the end"),
])
def test_malformed_files_are_refused(raw, match):
    with pytest.raises(BitfileError, match=match):
        read_bit(raw, "x.bit")
