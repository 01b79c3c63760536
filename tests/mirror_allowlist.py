"""Modules without a test module of their own at the mirrored path (see test_layout_mirror.py):
module -> the test modules that cover it and why it has none of its own. `via` names the module
the tests call when they reach this one only through it (it must import it, directly or not).

An entry goes when its module gets a test module (the checker says so); a new module gets a test
module, not an entry, unless one of the reasons below fits.
"""
from typing import NamedTuple


class Covered(NamedTuple):
    tests: tuple[str, ...]
    why: str
    via: str = ""


ERRORS = "error classes only: raised and matched (by class and message) in the tests of the modules that raise them"
REEXPORTS = "a package __init__ that re-exports its modules' names; the tests of those modules import through it"
INTERNAL = "a piece split out of a larger module for size; tested through that module's public entry"
CLI = "a `vdla` subcommand: the CLI tests run it as users call it, exit status and messages included"
RTL_HARNESS = "part of the cocotb harness that drives the RTL under Verilator; the RTL benches exercise it"
VDLA_SEMANTICS = ("an accelerator op's int8 semantics: its compiler record's tests run the kernel on the "
                  "cycle-exact simulator and require it equal, bit for bit, to these (tests/e2e/test_vdla_models.py "
                  "does the same on whole models)")
GPU_PATH = "a stage of the CUDA path; its tests compile and run whole kernels or models through it"
SIM_ENGINE = ("a stage of the cycle-exact simulator; tested through whole streams against the reference "
              "interpreter and the timing rules")

ALLOWLIST: dict[str, Covered] = {
    # --- vdla.bitstreams ---------------------------------------------------------------------
    "vdla.bitstreams": Covered(("tests/driver/test_board_package.py",),
                               "the board manifests' package (data only); the test finds them in the built wheel"),
    "vdla.bitstreams.build": Covered(("tests/driver/test_board.py", "tests/hw_unit/test_board_build.py"),
                                     "drives Vivado, which the tests cannot run: they check the command it writes "
                                     "and the user ID and config hash it records, with the tools stubbed"),

    # --- vdla.hw -----------------------------------------------------------------------------
    "vdla.hw.board_wrapper": Covered(("tests/hw_unit/test_board_build.py",),
                                     "the board's top-level wrapper is generated and checked with the board build"),
    "vdla.hw.disasm": Covered(("tests/driver/runtime/test_insn_queue.py", "tests/driver/cli/commands/test_disasm_vta.py"),
                              "the disassembler's lines are the expected values of the instruction-queue snapshots "
                              "and of `vdla disasm`"),
    "vdla.hw.presets": Covered(("tests/hw_unit/test_config.py",),
                               "a folder of config presets (JSON) with an empty __init__; loading them is the config's "
                               "test"),
    "vdla.hw.regmap": Covered(("tests/hw/test_control.py", "tests/driver/devices/pynq_sim/test_control_block.py"),
                              "register offsets and bits, stated once; the RTL's control block and the simulated "
                              "board's are tested register by register against them"),
    "vdla.hw.rtl.sim.__main__": Covered(("tests/hw/test_lint.py",), "the `python -m vdla.hw.rtl.sim` entry point; "
                                        "test_lint runs it"),
    "vdla.hw.rtl.sim.axi_lite": Covered(("tests/hw/test_errors.py", "tests/hw/harness.py"), RTL_HARNESS,
                                        via="vdla.driver.devices.rtl_bench"),
    "vdla.hw.rtl.sim.axi_memory": Covered(("tests/hw/test_errors.py", "tests/hw/harness.py"), RTL_HARNESS,
                                          via="vdla.driver.devices.rtl_bench"),
    "vdla.hw.rtl.sim.build": Covered(("tests/hw/test_lint.py", "tests/hw/test_queues.py"),
                                     "builds the Verilator model the RTL tests run; test_lint checks it for every "
                                     "supported config"),
    "vdla.hw.rtl.sim.facts": Covered(("tests/hw_unit/test_rtl_facts.py", "tests/hw/test_lint.py"),
                                     "tested with the RTL parameters it checks the sources against"),
    "vdla.hw.rtl_params": Covered(("tests/hw_unit/test_rtl_facts.py",),
                                  "the RTL's parameters derived from the config; test_rtl_facts checks them against "
                                  "the SystemVerilog sources"),
    "vdla.hw.timing": Covered(("tests/hw_unit/test_config.py", "tests/simulator/test_timing.py"),
                              "timing parameters (config) and the duration rules, whose cycle counts the simulator's "
                              "timing tests compute independently"),
    "vdla.hw.vta": Covered(("tests/driver/cli/commands/test_disasm_vta.py", "tests/compiler/test_compile_model_vta.py"),
                           "VTA's ISA limits as facts; the VTA check and VTA-compatible compiles are tested on them"),

    # --- vdla.simulator ----------------------------------------------------------------------
    "vdla.simulator.gemm": Covered(("tests/simulator/test_compute_engines.py",), SIM_ENGINE),
    "vdla.simulator.random_program": Covered(("tests/simulator/test_random_programs.py", "tests/hw/test_random_programs.py"),
                                             "the generator of seeded random programs is a test tool; its programs "
                                             "are the simulator's and the RTL's random tests"),
    "vdla.simulator.schedule": Covered(("tests/simulator/test_cycle_budget.py",), SIM_ENGINE),
    "vdla.simulator.simulator": Covered(("tests/simulator/test_cycle_budget.py",),
                                        "the simulator's entry point: every simulator test runs streams through it"),
    "vdla.simulator.state": Covered(("tests/simulator/test_alu_statement.py", "tests/simulator/test_semantics.py"),
                                    "the on-chip state record (SRAMs, queues); the semantics tests build and inspect it"),
    "vdla.simulator.stats": Covered(("tests/simulator/test_trace_waits.py",),
                                    "counters and traces of a launch; checked against the trace's waits (and, in "
                                    "tests/hw, against the RTL's counters)"),

    # --- vdla.compiler -----------------------------------------------------------------------
    "vdla.compiler.artifact_build": Covered(("tests/driver/test_artifact_devices.py", "tests/e2e/test_e2e_artifact.py"),
                                            "the artifact writer: every compiled model is written by it, and the "
                                            "loader's checks of each header field read it back",
                                            via="vdla.compiler.compile_model"),
    "vdla.compiler.build": Covered(("tests/compiler/codegen/test_codegen_targets.py",
                                    "tests/compiler/schedule/test_schedule_primitives.py"),
                                   "schedule -> loop IR -> object code in one function; every kernel test builds "
                                   "through it"),
    "vdla.compiler.codegen.arm_abi": Covered(("tests/compiler/codegen/test_arm_float_abi.py",
                                              "tests/compiler/codegen/test_link.py"),
                                             "the ARM float ABI is tested on the objects and the linked library"),
    "vdla.compiler.codegen.emit": Covered(("tests/compiler/codegen/test_arm_float_abi.py",
                                           "tests/compiler/codegen/test_link.py"),
                                          "object emission per target, checked on the emitted objects"),
    "vdla.compiler.codegen.llvm_codegen": Covered(("tests/compiler/codegen/test_codegen_targets.py",
                                                   "tests/compiler/codegen/test_guarded_loads.py"),
                                                  "loop IR -> LLVM IR; tested by running what it emits",
                                                  via="vdla.compiler.build"),
    "vdla.compiler.codegen.llvm_function": Covered(("tests/compiler/codegen/test_codegen_targets.py",), INTERNAL,
                                                   via="vdla.compiler.build"),
    "vdla.compiler.codegen.llvm_types": Covered(("tests/compiler/codegen/test_codegen_targets.py",), INTERNAL,
                                                via="vdla.compiler.build"),
    "vdla.compiler.codegen.parallel": Covered(("tests/driver/test_thread_pool.py",),
                                              "the parallel-for lowering; the pool's tests run parallel kernels "
                                              "against one thread and numpy", via="vdla.compiler.build"),
    "vdla.compiler.codegen.nvptx.build": Covered(("tests/compiler/codegen/nvptx/test_ptxas.py",
                                                  "tests/compiler/codegen/nvptx/test_nvptx_codegen.py"), GPU_PATH),
    "vdla.compiler.codegen.nvptx.codegen": Covered(("tests/compiler/codegen/nvptx/test_nvptx_codegen.py",), GPU_PATH,
                                                   via="vdla.compiler.codegen.nvptx.build"),
    "vdla.compiler.codegen.nvptx.emulate": Covered(("tests/compiler/codegen/nvptx/test_gpu_emulation.py",),
                                                   "the CPU emulation of GPU kernels, a test tool; tested against "
                                                   "numpy kernel by kernel"),
    "vdla.compiler.codegen.nvptx.llvm_math": Covered(("tests/compiler/codegen/nvptx/test_nvptx_codegen.py",), INTERNAL,
                                                     via="vdla.compiler.codegen.nvptx.build"),
    "vdla.compiler.codegen.nvptx.math": Covered(("tests/compiler/codegen/nvptx/test_gpu_math.py",),
                                                "the GPU math formulas, tested over the whole float32 range"),
    "vdla.compiler.codegen.nvptx.target": Covered(("tests/compiler/codegen/nvptx/test_nvptx_codegen.py",), GPU_PATH),
    "vdla.compiler.codegen.vdla.dma": Covered(("tests/compiler/codegen/vdla/test_passes.py",),
                                              "a VDLA pass; the pass pipeline's tests check each copy's DMA",
                                              via="vdla.compiler.codegen.vdla"),
    "vdla.compiler.codegen.vdla.emit": Covered(("tests/compiler/codegen/vdla/test_snapshot.py",
                                                "tests/compiler/codegen/vdla/test_tokens.py"),
                                               "emission of the instruction stream; the golden stream and the token "
                                               "tests check what it emits", via="vdla.compiler.codegen.vdla"),
    "vdla.compiler.codegen.vdla.errors": Covered(("tests/compiler/codegen/vdla/test_passes.py",), ERRORS,
                                                 via="vdla.compiler.codegen.vdla"),
    "vdla.compiler.codegen.vdla.nodes": Covered(("tests/compiler/codegen/vdla/test_passes.py",), INTERNAL,
                                                via="vdla.compiler.codegen.vdla"),
    "vdla.compiler.codegen.vdla.storage": Covered(("tests/compiler/codegen/vdla/test_passes.py",), INTERNAL,
                                                  via="vdla.compiler.codegen.vdla"),
    "vdla.compiler.codegen.vdla.uops": Covered(("tests/compiler/codegen/vdla/test_snapshot.py",),
                                               "micro-op folding; the golden stream holds its micro-op kernels",
                                               via="vdla.compiler.codegen.vdla"),
    "vdla.compiler.codegen.vdla.vthread": Covered(("tests/compiler/codegen/vdla/test_passes.py",),
                                                  "virtual threads to tokens, a VDLA pass",
                                                  via="vdla.compiler.codegen.vdla"),
    "vdla.compiler.codegen.vdla.walk": Covered(("tests/compiler/codegen/vdla/test_passes.py",), INTERNAL,
                                               via="vdla.compiler.codegen.vdla"),
    "vdla.compiler.dse.cache": Covered(("tests/compiler/dse/test_explore.py",),
                                       "the DSE's result cache; explore's tests run points twice and check what is cached",
                                       via="vdla.compiler.dse.explore"),
    "vdla.compiler.dse.errors": Covered(("tests/compiler/dse/test_sweep.py",), ERRORS),
    "vdla.compiler.dse.point": Covered(("tests/compiler/dse/test_explore.py", "tests/compiler/dse/test_dse_resnet18.py"),
                                       "one DSE point compiled and simulated; explore's tests compare its cycles with a "
                                       "direct compile and run"),
    "vdla.compiler.frontend.example_models": Covered(("tests/driver/test_timeline.py", "tests/compiler/dse/test_dse_ray.py"),
                                                     "models the demos and the DSE use; their tests compile and run them"),
    "vdla.compiler.frontend.onnx_checks": Covered(("tests/compiler/frontend/test_invalid_models.py",),
                                                  "the importer's checks of the ONNX definition; each invalid model there "
                                                  "is refused by it (and by onnxruntime)", via="vdla.compiler.frontend"),
    "vdla.compiler.intrin.cpu": Covered(("tests/compiler/intrin/test_tensorize.py",),
                                        "the CPU intrinsic declarations; tensorize's tests emit and run them"),
    "vdla.compiler.intrin.declaration": Covered(("tests/compiler/intrin/test_vdla_alu_declarations.py",
                                                 "tests/compiler/intrin/test_tensorize.py"),
                                                "how an intrinsic is declared; tested on each declared intrinsic",
                                                via="vdla.compiler.intrin.vdla"),
    "vdla.compiler.lower_gpu_graph": Covered(("tests/e2e/test_cuda_model.py",), GPU_PATH, via="vdla.compiler.compile_model"),
    "vdla.compiler.lower_gpu_winograd": Covered(("tests/e2e/test_cuda_winograd.py",),
                                                "picks and builds the GPU's Winograd convolutions; tested on whole "
                                                "models (which convs it takes, the weights' transforms, the direct "
                                                "fallback)", via="vdla.compiler.compile_cuda"),
    "vdla.compiler.vdla.front": Covered(("tests/compiler/graph/passes/test_calibrate.py",),
                                        "the front half of the VDLA pipeline (import, placement, calibration, "
                                        "quantization); every accelerator compile runs it", via="vdla.compiler.vdla"),
    "vdla.compiler.vdla.op": Covered(("tests/compiler/vdla/test_registry.py",),
                                     "the record of an accelerator op (a dataclass); the registry's tests check every "
                                     "record, the op tests use them"),
    "vdla.compiler.vdla.quantizer": Covered(("tests/compiler/vdla/test_quantize.py",), INTERNAL,
                                            via="vdla.compiler.vdla"),
    "vdla.compiler.onnx_backend": Covered(("tests/onnx_backend/test_onnx_node_tests.py",),
                                          "the onnx backend adapter; the onnx package's node tests run through it"),
    "vdla.compiler.schedule.gpu": Covered(("tests/compiler/schedule/test_gpu_schedule.py",), GPU_PATH),
    "vdla.compiler.schedule.gpu.checks": Covered(("tests/compiler/schedule/test_gpu_schedule.py",),
                                                 "each GPU schedule check has its test with the message",
                                                 via="vdla.compiler.schedule.gpu"),
    "vdla.compiler.schedule.gpu.fetch": Covered(("tests/compiler/schedule/test_gpu_schedule.py",), GPU_PATH,
                                                via="vdla.compiler.schedule.gpu"),
    "vdla.compiler.schedule.gpu.function": Covered(("tests/compiler/schedule/test_gpu_schedule.py",), GPU_PATH,
                                                   via="vdla.compiler.schedule.gpu"),
    "vdla.compiler.schedule.gpu.kernels": Covered(("tests/compiler/schedule/test_gpu_schedule.py",), GPU_PATH,
                                                  via="vdla.compiler.schedule.gpu"),
    "vdla.compiler.schedule.lower": Covered(("tests/compiler/schedule/test_schedule_primitives.py",),
                                            "schedule -> loop IR; every primitive's test lowers and runs it"),
    "vdla.compiler.schedule.thread_binding": Covered(("tests/compiler/schedule/test_gpu_schedule.py",),
                                                     "bind()'s per-stage checks; the GPU schedule tests call bind",
                                                     via="vdla.compiler.schedule"),
    "vdla.compiler.target": Covered(("tests/compiler/codegen/test_codegen_targets.py",),
                                    "targets and triples; the codegen tests build for each"),
    "vdla.compiler.te.operation": Covered(("tests/compiler/te/test_te_language.py",),
                                          "the tensor-expression operations, tested as the language", via="vdla.compiler.te"),
    "vdla.compiler.te.tensor": Covered(("tests/compiler/te/test_te_language.py",),
                                       "tensors and placeholders, tested as the language", via="vdla.compiler.te"),
    "vdla.compiler.tir.arith": Covered(("tests/compiler/tir/test_tir_simplify_verify.py",),
                                       "the simplifier, checked on random index expressions evaluated before and after"),
    "vdla.compiler.tir.dtype": Covered(("tests/compiler/te/test_te_language.py",), "dtype names and lanes; every IR "
                                       "test builds typed expressions", via="vdla.compiler.te"),
    "vdla.compiler.tir.expr": Covered(("tests/compiler/tir/test_tir_simplify_verify.py",
                                       "tests/compiler/codegen/vdla/test_affine.py"),
                                      "the expression node classes; every IR test builds them"),
    "vdla.compiler.tir.functor": Covered(("tests/compiler/tir/passes/test_vectorize.py",
                                          "tests/compiler/codegen/vdla/test_passes.py"),
                                         "tree walks (visit, transform); the passes' tests use and run them"),
    "vdla.compiler.tir.gpu": Covered(("tests/compiler/schedule/test_gpu_schedule.py",), GPU_PATH),
    "vdla.compiler.tir.passes.flatten": Covered(("tests/compiler/tir/passes/test_vectorize.py",),
                                                "flat indices are what vectorize reads; it runs before it in every "
                                                "build", via="vdla.compiler.build"),
    "vdla.compiler.tir.passes.simplify": Covered(("tests/compiler/tir/passes/test_partition.py",),
                                                 "applies the simplifier to a function (6 lines); partition's tests "
                                                 "check what it folds after each split", via="vdla.compiler.build"),
    "vdla.compiler.tir.passes.vthread": Covered(("tests/compiler/schedule/test_schedule_primitives.py",),
                                                "virtual threads lowered to loops; the vthread primitive's test",
                                                via="vdla.compiler.build"),
    "vdla.compiler.tir.printer": Covered(("tests/compiler/tir/test_tir_simplify_verify.py",),
                                         "the loop IR printer (12 lines), tested there"),
    "vdla.compiler.tir.stmt": Covered(("tests/compiler/tir/passes/test_vectorize.py",
                                       "tests/compiler/codegen/vdla/test_passes.py"),
                                      "the statement node classes; every IR test builds them"),
    "vdla.compiler.tir.verify": Covered(("tests/compiler/tir/test_tir_simplify_verify.py",),
                                        "the IR verifier, tested there"),
    "vdla.compiler.topi.conv": Covered(("tests/compiler/topi/test_nn.py",), "convolution compute definitions, "
                                       "against onnxruntime there", via="vdla.compiler.topi"),
    "vdla.compiler.topi.conv_schedules": Covered(("tests/compiler/tune/test_cpu_knobs.py",),
                                                 "the fast CPU conv schedules; tested with and without tuned knobs "
                                                 "against numpy", via="vdla.compiler.topi.schedule_cpu"),
    "vdla.compiler.topi.cpu_knobs": Covered(("tests/compiler/tune/test_cpu_knobs.py",),
                                            "the CPU knobs, tested with the CPU tuner"),
    "vdla.compiler.topi.gpu": Covered(("tests/compiler/codegen/nvptx/test_gpu_emulation.py",), GPU_PATH),
    "vdla.compiler.topi.gpu.common": Covered(("tests/compiler/codegen/nvptx/test_gpu_emulation.py",), GPU_PATH,
                                             via="vdla.compiler.topi.gpu"),
    "vdla.compiler.topi.gpu.cross_thread": Covered(("tests/compiler/schedule/test_cross_thread.py",
                                                    "tests/compiler/codegen/nvptx/test_gpu_emulation.py"), GPU_PATH,
                                                   via="vdla.compiler.topi.gpu"),
    "vdla.compiler.topi.gpu.conv2d": Covered(("tests/compiler/codegen/nvptx/test_gpu_emulation.py",), GPU_PATH,
                                             via="vdla.compiler.topi.gpu"),
    "vdla.compiler.topi.gpu.dense": Covered(("tests/compiler/codegen/nvptx/test_gpu_emulation.py",), GPU_PATH,
                                            via="vdla.compiler.topi.gpu"),
    "vdla.compiler.topi.gpu.injective": Covered(("tests/compiler/codegen/nvptx/test_gpu_emulation.py",), GPU_PATH,
                                                via="vdla.compiler.topi.gpu"),
    "vdla.compiler.topi.gpu.reduction": Covered(("tests/compiler/codegen/nvptx/test_gpu_emulation.py",), GPU_PATH,
                                                via="vdla.compiler.topi.gpu"),
    "vdla.compiler.topi.gpu.softmax": Covered(("tests/compiler/codegen/nvptx/test_gpu_emulation.py",), GPU_PATH,
                                              via="vdla.compiler.topi.gpu"),
    "vdla.compiler.topi.gpu.winograd": Covered(("tests/e2e/test_cuda_winograd.py",),
                                               "the GPU Winograd compute and schedule; its kernels are in the GPU "
                                               "test kernels (emulation, ptxas) and whole models run through it"),
    "vdla.compiler.topi.quant": Covered(("tests/compiler/topi/test_transform.py",), "quantization compute "
                                        "definitions, against numpy there", via="vdla.compiler.topi"),
    "vdla.compiler.topi.reduce": Covered(("tests/compiler/topi/test_transform.py",), "reductions, against numpy "
                                         "there", via="vdla.compiler.topi"),
    "vdla.compiler.topi.schedule_cpu": Covered(("tests/compiler/tune/test_cpu_knobs.py",),
                                               "the default CPU schedules, tested with the knobs that vary them"),
    "vdla.compiler.topi.tags": Covered(("tests/compiler/topi/test_nn.py",), "tag names (23 lines) the schedules "
                                       "read", via="vdla.compiler.topi"),
    "vdla.compiler.topi.vdla.build": Covered(("tests/compiler/topi/vdla/test_conv.py",),
                                             "builds one VDLA kernel; every topi.vdla test compiles through it",
                                             via="vdla.compiler.topi.vdla"),
    "vdla.compiler.topi.vdla.ops": Covered(("tests/compiler/topi/vdla/test_conv.py", "tests/compiler/topi/vdla/test_dense.py"),
                                           "the VDLA operator entry points, each tested by op",
                                           via="vdla.compiler.topi.vdla"),
    "vdla.compiler.topi.vdla.run": Covered(("tests/compiler/topi/vdla/test_conv.py",),
                                           "runs a compiled kernel on a device for the tests and the tuner",
                                           via="vdla.compiler.topi.vdla"),
    "vdla.compiler.topi.vdla.schedule": Covered(("tests/compiler/codegen/vdla/test_passes.py",
                                                 "tests/compiler/codegen/vdla/test_whole_reduction_gemm.py"),
                                                "the default VDLA schedules, lowered and run by these"),
    "vdla.compiler.tune.cpu_apply": Covered(("tests/compiler/tune/test_cpu_tuned_compile.py",),
                                            "applies a CPU tuning log at compile time; tested by compiling with one",
                                            via="vdla.compiler.compile_model"),
    "vdla.compiler.tune.cpu_signature": Covered(("tests/compiler/tune/test_cpu_records.py",),
                                                "the CPU kernel's identity in a tuning log, tested with the records"),
    "vdla.compiler.tune.cpu_space": Covered(("tests/compiler/tune/test_cpu_search.py",),
                                            "the CPU knob space, tested by the searches over it"),
    "vdla.compiler.tune.cpu_tune_model": Covered(("tests/compiler/tune/test_cpu_tuned_compile.py",),
                                                 "tunes a model's CPU kernels; tested end to end"),
    "vdla.compiler.tune.errors": Covered(("tests/compiler/tune/test_records.py",), ERRORS, via="vdla.compiler.tune"),
    "vdla.compiler.tune.knob_json": Covered(("tests/compiler/tune/test_records.py",),
                                            "reads knobs from a log's JSON; the records tests feed it broken fields",
                                            via="vdla.compiler.tune.records"),
    "vdla.compiler.tune.measure": Covered(("tests/compiler/tune/test_search.py",),
                                          "measures VDLA candidates on the simulator; tested by the searches"),
    "vdla.compiler.tune.space": Covered(("tests/compiler/tune/test_knob_space.py",), "the VDLA knob space, tested "
                                        "as the knob space"),

    # --- vdla.driver -------------------------------------------------------------------------
    "vdla.driver.artifact_errors": Covered(("tests/driver/test_header_fields.py",), ERRORS),
    "vdla.driver.cli.commands.compile": Covered(("tests/e2e/test_vdla_cli.py", "tests/e2e/test_cli_errors.py"), CLI),
    "vdla.driver.cli.commands.info": Covered(("tests/driver/cli/test_closed_stdout.py", "tests/e2e/test_vdla_cli.py"), CLI),
    "vdla.driver.cli.commands.keygen": Covered(("tests/e2e/test_artifact_safety.py",), CLI),
    "vdla.driver.cli.commands.serve": Covered(("tests/driver/cli/test_remote_run.py",), CLI),
    "vdla.driver.cli.commands.tune": Covered(("tests/compiler/tune/test_tune_cli.py",), CLI),
    "vdla.driver.control": Covered(("tests/driver/devices/pynq_sim/test_control_block.py", "tests/hw/test_control.py"),
                                   "the launch sequence on the control registers; run against the simulated board's "
                                   "control block and the RTL's"),
    "vdla.driver.cpu_kernel": Covered(("tests/driver/test_kernel_abi.py",),
                                      "loads CPU kernels (JIT or shared object); tested through the kernel ABI and the "
                                      "linked libraries"),
    "vdla.driver.devices.pynq": Covered(("tests/driver/test_board.py", "tests/pynq_board/test_pynq_device_on_sim_board.py"),
                                        "needs the pynq package: tested through it on the simulated board (its own "
                                        "environment, .ci/run); without pynq, the error saying so"),
    "vdla.driver.devices.pynq_sim.design": Covered(("tests/driver/devices/pynq_sim/test_control_block.py",),
                                                   "simulation bitstreams and their design, tested with the block"),
    "vdla.driver.devices.pynq_sim.device": Covered(("tests/pynq_board/test_sim_board_in_pynq.py",),
                                                   "the simulated board as the pynq package sees it; needs pynq"),
    "vdla.driver.devices.pynq_sim.faults": Covered(("tests/driver/devices/pynq_sim/test_control_block.py",),
                                                   "the error causes of refused streams; the block's tests expect "
                                                   "the RTL's cause for each", via="vdla.driver.devices.pynq_sim.control_block"),
    "vdla.driver.devices.pynq_sim.rtl_fabric": Covered(("tests/pynq_board/test_pynq_device_on_rtl_board.py",),
                                                       "the RTL as the simulated board's fabric; needs pynq and "
                                                       "Verilator"),
    "vdla.driver.devices.rtl": Covered(("tests/hw/test_equivalence.py", "tests/hw/test_compiled_kernels.py"),
                                       "the RTL under Verilator as a device; the RTL benches compare it with the "
                                       "simulator device"),
    "vdla.driver.devices.rtl_bench": Covered(("tests/hw/test_errors.py", "tests/hw/harness.py"), RTL_HARNESS),
    "vdla.driver.gpu_limits": Covered(("tests/compiler/schedule/test_gpu_schedule.py",
                                       "tests/compiler/codegen/nvptx/test_ptxas.py"),
                                      "GPU limits (threads per block, shared memory, architectures) as facts; the "
                                      "schedule checks and ptxas runs test each limit where it is enforced"),
    "vdla.driver.gpu_steps": Covered(("tests/e2e/test_cuda_model.py",), GPU_PATH, via="vdla.driver.executor"),
    "vdla.driver.host_ops.axes": Covered(("tests/driver/host_ops/test_operands.py",),
                                         "axis normalization (30 lines); the operand tests give out-of-range axes",
                                         via="vdla.driver.host_ops"),
    "vdla.driver.host_ops.errors": Covered(("tests/driver/host_ops/test_operands.py",), ERRORS, via="vdla.driver.host_ops"),
    "vdla.driver.host_ops.shape": Covered(("tests/onnx_backend/test_onnx_node_tests.py",),
                                          "numpy statements of the data-movement ops and their shape rules; the onnx "
                                          "node tests (and tests/driver/host_ops/test_operands.py's operand checks)",
                                          via="vdla.compiler.onnx_backend"),
    "vdla.driver.host_ops.vdla.add": Covered(("tests/compiler/vdla/ops/test_add.py",), VDLA_SEMANTICS),
    "vdla.driver.host_ops.vdla.dense": Covered(("tests/compiler/vdla/ops/test_dense.py",), VDLA_SEMANTICS),
    "vdla.driver.host_ops.vdla.matmul": Covered(("tests/compiler/vdla/ops/test_matmul.py",), VDLA_SEMANTICS),
    "vdla.driver.host_ops.vdla.moves": Covered(("tests/compiler/vdla/test_moves.py",),
                                               "the packed moves' int8 semantics: the compiler's tests compare them "
                                               "with numpy on unpacked tensors and run them in whole models"),
    "vdla.driver.host_ops.vdla.packed": Covered(("tests/compiler/vdla/ops/test_conv.py",), INTERNAL,
                                                via="vdla.driver.host_ops.vdla.conv"),
    "vdla.driver.host_ops.vdla.pool": Covered(("tests/compiler/vdla/ops/test_pool.py",), VDLA_SEMANTICS),
    "vdla.driver.host_ops.vdla.semantics": Covered(("tests/compiler/vdla/test_registry.py",),
                                                   "the record of an op's semantics (a dataclass); the registry's "
                                                   "tests check every record", via="vdla.driver.host_ops.vdla"),
    "vdla.driver.host_ops.winograd": Covered(("tests/compiler/topi/test_winograd.py",),
                                             "the Winograd transforms' numpy semantics, tested with the kernel"),
    "vdla.driver.remote.arrays": Covered(("tests/driver/remote/test_protocol.py",), "arrays on the wire, tested with "
                                         "the protocol"),
    "vdla.driver.remote.client": Covered(("tests/driver/remote/test_server.py",),
                                         "the client side of a remote run (RemoteRunner); the server tests run it "
                                         "against a server in this process"),
    "vdla.driver.remote.defaults": Covered(("tests/driver/cli/test_remote_run.py",), "port and timeouts (7 lines)",
                                           via="vdla.driver.cli.commands.serve"),
    "vdla.driver.remote.errors": Covered(("tests/driver/remote/test_protocol.py",),
                                         ERRORS, via="vdla.driver.remote.protocol"),
    "vdla.driver.remote.handshake": Covered(("tests/driver/remote/test_protocol.py",),
                                            "the key handshake, tested with the protocol (both sides, wrong keys)"),
    "vdla.driver.remote.limits": Covered(("tests/driver/remote/test_protocol.py", "tests/driver/remote/test_server.py"),
                                         "the size limits, tested where they are enforced"),
    "vdla.driver.remote.run_request": Covered(("tests/driver/remote/test_protocol.py",),
                                              "run requests on the wire, tested with the protocol"),
    "vdla.driver.remote.worker": Covered(("tests/driver/remote/test_server.py",),
                                         "runs requests in the worker process; the server tests run, time out and kill "
                                         "it"),
    "vdla.driver.remote.worker_process": Covered(("tests/driver/remote/test_server.py",),
                                                 "starts and replaces the worker; the server tests kill it mid-run",
                                                 via="vdla.driver.remote.server"),
    "vdla.driver.runtime.errors": Covered(("tests/driver/runtime/test_command_queue.py",), ERRORS,
                                          via="vdla.driver.runtime"),
    "vdla.driver.runtime.vta_check": Covered(("tests/compiler/test_compile_model_vta.py",
                                              "tests/compiler/topi/vdla/test_vta_mode.py"),
                                             "the runtime's VTA check (28 lines) over vdla.simulator.vta_check's rules "
                                             "(tests/simulator/test_vta_check.py)"),
}
