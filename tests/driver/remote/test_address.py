"""HOST:PORT parsing and the loopback rule (vdla.driver.remote.address): IPv4, names and bracketed
IPv6 parse, everything else is a ValueError naming the flag; only literal loopback addresses
count as this machine."""
import pytest

from vdla.driver.remote.address import format_address, is_loopback, parse_address


@pytest.mark.parametrize("text, want", [
    ("192.168.2.99:9091", ("192.168.2.99", 9091)), ("board.local:1", ("board.local", 1)),
    ("[::1]:65535", ("::1", 65535)), ("[fe80::1%eth0]:80", ("fe80::1%eth0", 80)),
])
def test_addresses_parse_and_format_back(text, want):
    assert parse_address(text) == want
    assert format_address(*want) == text


@pytest.mark.parametrize("text", ["board", "board:", ":9091", "board:0", "board:65536", "board:-1", "board:9x",
                                  "[::1]", "[::1]9091", "[]:80"])
def test_malformed_addresses_name_the_flag_and_the_form(text):
    with pytest.raises(ValueError, match=rf"--listen '{__import__('re').escape(text)}': expected HOST:PORT with a "
                                         r"port from 1 to 65535"):
        parse_address(text, flag="--listen")


def test_an_ipv6_address_without_brackets_says_to_add_them():
    with pytest.raises(ValueError, match=r"--remote '::1:80': write an IPv6 address in brackets, \[ADDRESS\]:PORT"):
        parse_address("::1:80")


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.4.5.6", True), ("::1", True),
                                            ("localhost", False), ("10.0.0.1", False), ("::2", False),
                                            ("not an address", False)])
def test_only_literal_loopback_addresses_are_this_machine(host, loopback):
    assert is_loopback(host) is loopback
