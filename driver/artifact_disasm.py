"""The instruction streams of an artifact's accelerator kernels, assembled as a run assembles
them (the runtime's JIT replays each program on a command queue), for `vdla disasm`: to read,
to check for VTA, to export.

A stream's addresses depend on the buffers it runs on; here the micro-ops and the stream sit
at the bottom of a simulator's DRAM (the image exported beside the stream) and the kernel's
buffers after them, one after another, as the executor's device arena would place them."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .artifact_errors import ArtifactError
from .device import DeviceBuffer

IMAGE_BYTES = 1 << 24        # micro-ops and the stream: a ResNet-18 kernel needs under 64 KiB


@dataclass
class KernelStream:
    name: str                # the program's name (v3_conv)
    nodes: list[str]         # the graph nodes that run it
    insns: list              # decoded instructions
    words: np.ndarray        # the raw stream (uint8, 16 bytes per instruction)
    dram: np.ndarray         # DRAM image from address 0 to the stream's end: micro-ops, then the stream
    insn_addr: int           # where the stream starts in `dram`
    uop_bytes: int
    config: object           # the HwConfig it was compiled for


def kernel_streams(artifact, kernel: str | None = None) -> list[KernelStream]:
    """Every accelerator kernel of `artifact`, or the one named `kernel` (a program name or a
    graph node that runs it); ArtifactError naming the kernels there are otherwise."""
    from vdla.hw import load_config

    from .runtime.program import KernelProgram
    docs = artifact.header.get("vdla_programs") or []
    if not docs:
        raise ArtifactError("the artifact has no accelerator kernels (it was compiled for the CPU: "
                            "compile with --target vdla for a stream to list)")
    nodes: dict[int, list[str]] = {}
    for step in artifact.plan.steps:
        if step.kind == "vdla":
            nodes.setdefault(step.program, []).append(step.name)
    picked = range(len(docs))
    if kernel is not None:
        picked = [i for i, doc in enumerate(docs) if doc["name"] == kernel or kernel in nodes.get(i, [])]
        if not picked:
            raise ArtifactError(f"no kernel {kernel!r} in the artifact; its kernels: "
                                + ", ".join(f"{doc['name']} ({', '.join(nodes.get(i, []))})" for i, doc in enumerate(docs)))
    config = load_config(artifact.header["hardware"]["config"])
    return [assemble(KernelProgram.from_dict(docs[i]), config, nodes.get(i, [])) for i in picked]


def assemble(program, config, nodes: list[str] = ()) -> KernelStream:
    """The stream of one KernelProgram (compiled for `config`), as a run assembles it."""
    from .devices.simulator import SimulatorDevice
    from .runtime.command_queue import CommandQueue
    device = SimulatorDevice(config, dram_bytes=IMAGE_BYTES)
    cq = CommandQueue(device)
    addr, buffers = IMAGE_BYTES, []
    for p in program.params:             # (replay reads their addresses only)
        align = max(64, p.elem_bytes)
        addr = -(-addr // align) * align
        buffers.append(DeviceBuffer(addr, p.nbytes))
        addr += p.nbytes
    program.replay(cq, buffers)
    insns = cq.finish_stream()
    words = cq.isa.encode_stream(insns).reshape(-1).view(np.uint8)
    stream = device.alloc(words.size, align=64)
    device.write(stream, words)
    uop_bytes = sum(b.nbytes for b in map(cq.kernel_buffer, program.kernels) if b is not None)
    dram = device.dram[:stream.addr + words.size].copy()
    return KernelStream(program.name, list(nodes), insns, words, dram, stream.addr, uop_bytes, config)
