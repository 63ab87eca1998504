"""Where kernel code may say `with wk.stream_parallel():` (Quadrants' blocks of top-level loops run on separate
CUDA streams; here the loops run one after another, each in parallel: lang/kernel_functions.py).

The checks are Quadrants' own, with its phrases in the messages (names spelled as the kernel spells them): a
`with` names one context manager; the block is written in a kernel, not in a func (a func has no top-level loops of
its own), and not in a `graph=True` kernel (streams and graphs do not combine); and once a kernel uses such blocks,
every top-level statement is one (docstring aside), so no work runs outside the streams."""
from __future__ import annotations

import ast
from typing import Any

from wgkern.errors import CompileError
from wgkern.frontend.graph_regions import module_prefix, spelling
from wgkern.lang import math as wm


def is_stream_parallel(builder: Any, stmt: ast.stmt) -> bool:
    """`stmt` is `with wk.stream_parallel(): ...` (the callee resolved as the kernel sees it)."""
    if not isinstance(stmt, ast.With) or len(stmt.items) != 1:
        return False
    context = stmt.items[0].context_expr
    return isinstance(context, ast.Call) and builder.visit(context.func) is wm.stream_parallel


def check_with(builder: Any, node: ast.With) -> None:
    """Refuse a `with` statement Quadrants refuses (any kind: regions and stream blocks alike name one manager),
    and a stream block where one cannot be."""
    if len(node.items) != 1:
        raise CompileError("'with' in Quadrants kernels only supports a single context manager; nest the "
                           "'with' statements")
    if not is_stream_parallel(builder, node):
        return
    call = node.items[0].context_expr.func
    name, qd = spelling(call) + "()", module_prefix(call)
    if not builder.frame.is_kernel:
        raise CompileError(f"{name} can only be used inside @{qd}.kernel, not @{qd}.func (it groups a "
                           "kernel's top-level loops)")
    if getattr(builder.ctx.kernel, "graph", False):
        raise CompileError(f"{name} is not compatible with graph=True kernels. Streams and graphs cannot be "
                           f"combined; remove graph=True or the {name} block.")
    body = builder.frame.src.tree.body
    if not any(is_stream_parallel(builder, stmt) for stmt in body):
        return                      # a block inside other statements: Quadrants checks only top-level ones
    for position, stmt in enumerate(body):
        docstring = (position == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
                     and isinstance(stmt.value.value, str))
        if not docstring and not is_stream_parallel(builder, stmt):
            raise CompileError(f"When using {name}, all top-level statements of the kernel must be {name} "
                               f"blocks; line {builder.frame.src.loc(stmt).lineno} is a "
                               f"{type(stmt).__name__}")
