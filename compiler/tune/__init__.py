"""Tuning kernel schedules (`vdla tune`), for the accelerator and for the CPU.

VDLA: for each distinct conv/dense kernel of a model (signature.py: layer shape, stride,
padding, epilogue kind, VTA mode) a search (search.py) measures schedules from the kernel's
knob space (space.py: tiles, input-channel chunks, virtual threads and their axis, loop order)
on the simulator (measure.py: cycles, and the output checked bit for bit against the default
schedule's), in parallel over the cores. The best schedule becomes a record of a tuning log
(records.py) keyed by signature and hardware, which `vdla compile --tuning` applies to any
model with that kernel (lower_vdla).

CPU (cpu_*.py): for each distinct CPU kernel whose schedule has knobs (topi.cpu_knobs: register
tiles of the direct, depthwise and Winograd convolutions, dense columns), candidates compiled
on worker processes are timed one at a time on this host against the default
(cpu_measure.py); a record (cpu_records.py, in the same log) is keyed by the kernel's
signature and the host (cpu_signature.py) and applied by compile through CpuTuningUse."""
from .cpu_apply import CpuTuningUse
from .cpu_records import CpuTuningRecord
from .cpu_tune_model import CpuTuneSummary, tune_cpu_kernels, tune_cpu_model
from .errors import TuningError, TuningFileError
from .records import TuningLog, TuningRecord, load_tuning
from .signature import epilogue_kind, kernel_signature, tuning_hash
from .tune_model import ModelKernel, TuneSummary, model_kernels, random_calibration, tune_model

__all__ = ["TuningError", "TuningFileError", "TuningLog", "TuningRecord", "load_tuning", "epilogue_kind",
           "kernel_signature", "tuning_hash", "ModelKernel", "TuneSummary", "model_kernels", "random_calibration",
           "tune_model", "CpuTuningRecord", "CpuTuningUse", "CpuTuneSummary", "tune_cpu_kernels", "tune_cpu_model"]
