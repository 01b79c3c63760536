"""Code generation: loop IR -> LLVM IR -> optimized module -> object file."""
from .llvm_codegen import LLVMCodegen, CodegenError
from .emit import optimize, emit_object, elf_machine
