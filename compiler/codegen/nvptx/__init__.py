"""The GPU backend: loop IR in launch form -> LLVM IR for NVPTX -> PTX; ptxas checks it, and
emulate.py runs the same kernels on the CPU where no GPU is."""
