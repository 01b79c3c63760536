from vdla.hw.errors import ConfigError


class SweepError(ConfigError, ValueError):
    """A sweep file or a DSE request is malformed; the message names the key and what was expected."""
