"""How the environment asks for the simulated board: VDLA_PYNQ_SIM set (any value) loads it,
and its value picks the fabric behind the registers."""
from __future__ import annotations

import os

ENV_VAR = "VDLA_PYNQ_SIM"


def fabric_from_environment() -> str:
    """What VDLA_PYNQ_SIM asks the fabric to be: "rtl" for the RTL, any other value the simulator."""
    return "rtl" if os.environ.get(ENV_VAR, "").strip().lower() == "rtl" else "simulator"
