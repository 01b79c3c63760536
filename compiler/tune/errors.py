"""The tuner's errors."""
from vdla.hw.errors import CompileError, ConfigError


class TuningError(CompileError, ValueError):
    """A search that cannot be made: the message names the kernel and what went wrong."""


class TuningFileError(ConfigError, TuningError):
    """A tuning log that cannot be read or used: the message names the file, the record and
    the field, and what was expected."""


class TuningOptionError(ConfigError, TuningError):
    """A tuning option out of its range (--trials, --jobs): the message names the flag."""
