"""The tuner's errors."""


class TuningError(ValueError):
    """A search that cannot be made: the message names the kernel and what went wrong."""


class TuningFileError(TuningError):
    """A tuning log that cannot be read or used: the message names the file, the record and
    the field, and what was expected."""
