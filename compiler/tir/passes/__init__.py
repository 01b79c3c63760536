"""Loop-IR passes. Each is a named function PrimFunc -> PrimFunc."""
from .flatten import flatten_buffers
from .vectorize import vectorize_loops
from .unroll import unroll_loops
from .vthread import lower_virtual_threads
from .simplify import simplify_func
from .partition import partition_loops
from .unswitch import unswitch_loops
