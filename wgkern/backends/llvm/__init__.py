"""LLVM backends: shared codegen (IR task -> LLVM IR) plus the CPU runtime (cpu.py).

Importing this package does not import llvmlite; `from wgkern.backends.llvm.cpu import CpuBackend` does."""
