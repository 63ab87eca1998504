"""The WGSL of a kernel's tasks kept in the offline cache, found without generating it ('code' entries of the
offline cache, with the `.wgsl` suffix).

A WGSL backend hands its shaders to the driver as text, and the drivers keep what they compile from it (Mesa's
and NVIDIA's shader caches), but the text itself had to be generated again at every start: for Genesis's
falling box on lavapipe, half a second of a five-second warm build. When a kernel's IR comes from a frontend
cache entry, that entry's key determines the IR (backends/code_records.py); under it and the backend's settings
that shape the code (the device's features and limits, the binding plan, OUTLINE_LINES) this module keeps each
task's WGSL with what the runtime needs beside it (workgroup size, the container slots it declares, how many of
its loops run in chunks), compressed. A later start with the same key builds its tasks from the record; one
whose parameter struct differs from the record's, or whose chunked loops do not match, generates the shaders
as before (and writes the record again).

Kernels with adstacks, debug builds, kernels that print and kernels with subgroup operations are generated at
every start: their shaders hold numbers of this process's tables (code_records.key, and the subgroup tile sites).
The one such number a recorded shader holds, its loop-limit site on llvmpipe (task_mains.site_declaration), is
on a line of its own: loading registers the site in this process's table again and writes its number there."""
from __future__ import annotations

import ast
import zlib
from typing import Any, Sequence

from wgkern import disk_cache
from wgkern.backends import code_records
from wgkern.backends.wgsl.codegen import ParamsLayout, TaskShader
from wgkern.backends.wgsl.serial_chunks import chunked_loops
from wgkern.backends.wgsl.task_mains import loop_limit_site, site_declaration
from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk

_SUFFIX = ".wgsl"


def key(origin: str | None, kernel: ir.OffloadedKernel, debug: bool, *settings: Any) -> str | None:
    """The record's key (code_records.key), None where the kernel's shaders are generated at every start."""
    if any(isinstance(stmt, ir.SimtOp) for task in kernel.tasks for stmt in walk(task.body)):
        return None
    return code_records.key(origin, kernel, debug, "wgsl", *settings)


def load(record_key: str, kernel: ir.OffloadedKernel, layout: ParamsLayout,
         loop_limit_sites: list[Any]) -> list[TaskShader] | None:
    """The tasks' shaders kept under `record_key` for `layout`, their loop-limit sites registered in
    `loop_limit_sites`; None where there is no usable record."""
    stored = disk_cache.load(code_records.KIND, record_key, _SUFFIX)
    if stored is None:
        return None
    try:
        record = ast.literal_eval(zlib.decompress(stored).decode())
        fingerprint, tasks = record
    except (ValueError, SyntaxError, UnicodeDecodeError, MemoryError, RecursionError, TypeError, zlib.error):
        return None
    if fingerprint != _fingerprint(layout) or len(tasks) != len(kernel.tasks):
        return None
    shaders = []
    for task, (wgsl, workgroup, containers, chunked, site) in zip(kernel.tasks, tasks):
        loops = chunked_loops(task) if chunked else ()
        if len(loops) != chunked or (site and site_declaration(site) not in wgsl):
            return None
        shaders.append(TaskShader(task, wgsl, workgroup, tuple(containers), loops, site))
    for shader in shaders:
        if shader.loop_site:
            loop_limit_sites.append(loop_limit_site(kernel.name, shader.task))
            number = len(loop_limit_sites)
            shader.wgsl = shader.wgsl.replace(site_declaration(shader.loop_site), site_declaration(number), 1)
            shader.loop_site = number
    return shaders


def store(record_key: str, layout: ParamsLayout, shaders: Sequence[TaskShader]) -> None:
    """Keep `shaders`, generated against `layout`, under `record_key`."""
    tasks = [(shader.wgsl, shader.workgroup_size, shader.containers, len(shader.chunked_loops), shader.loop_site)
             for shader in shaders]
    data = zlib.compress(repr((_fingerprint(layout), tasks)).encode(), 1)
    disk_cache.store(code_records.KIND, record_key, _SUFFIX, data)


def _fingerprint(layout: ParamsLayout) -> tuple:
    """What of the launch-argument struct the shaders were generated against."""
    return layout.members, layout.pack.format, layout.size, layout.stack_words
