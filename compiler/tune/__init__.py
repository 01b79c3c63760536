"""Tuning VDLA schedules on the cycle-exact simulator (`vdla tune`).

For each distinct conv/dense kernel of a model (signature.py: layer shape, stride, padding,
epilogue kind, VTA mode) a search (search.py) measures schedules from the kernel's knob
space (space.py: tiles, input-channel chunks, virtual threads and their axis, loop order)
on the simulator (measure.py: cycles, and the output checked bit for bit against the
default schedule's), in parallel over the cores. The best schedule becomes a record of a
tuning log (records.py) keyed by signature and hardware, which `vdla compile --tuning`
applies to any model with that kernel (lower_vdla)."""
from .errors import TuningError, TuningFileError
from .records import TuningLog, TuningRecord, load_tuning
from .signature import epilogue_kind, kernel_signature, tuning_hash
from .tune_model import ModelKernel, TuneSummary, model_kernels, random_calibration, tune_model

__all__ = ["TuningError", "TuningFileError", "TuningLog", "TuningRecord", "load_tuning", "epilogue_kind",
           "kernel_signature", "tuning_hash", "ModelKernel", "TuneSummary", "model_kernels", "random_calibration",
           "tune_model"]
