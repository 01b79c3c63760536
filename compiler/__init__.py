"""vdla.compiler: graph and tensor compiler. `build` compiles a schedule into a CPU kernel."""
from .build import build  # noqa: F401  (the contract: vdla.compiler.build(schedule, args, target, name))
