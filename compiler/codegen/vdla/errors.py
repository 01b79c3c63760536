class VdlaLoweringError(ValueError):
    """The loop IR cannot become VDLA instructions; the message names the statement or
    buffer and what the hardware needs instead."""
