"""Frontend: Python AST of a `@wk.kernel` (and the `@wk.func`s it calls) -> `KernelIR`.

Entry point `build_kernel(kernel, arg_specs, template_values)`. builder.py holds the central visitor;
expressions.py, calls.py, statements.py and loops.py the node rules; vectors.py scalarises vectors; static_eval.py
evaluates `wk.static(...)`; intrinsics.py maps `wk.*` functions to IR ops. User mistakes raise located
`CompileError`s."""
from __future__ import annotations

from typing import Any

from wgkern.ir.nodes import ArgSpec, KernelIR


def build_kernel(kernel: Any, arg_specs: list[ArgSpec], template_values: dict[int, Any]) -> KernelIR:
    """Translate `kernel.fn` specialised to `arg_specs` (templates folded from `template_values`)."""
    from wgkern.frontend.builder import BuildContext, FunctionBuilder
    context = BuildContext(kernel, list(arg_specs), dict(template_values))
    return FunctionBuilder(context).build()


__all__ = ["build_kernel"]
