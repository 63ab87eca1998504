"""The compute pipelines of a WgslBackend: one per (pipeline layout, override constants, WGSL), with the shader
module of each WGSL text made once and shared by its pipelines.

Making a pipeline is naga's parse, validation and SPIR-V output and then the driver's compile, all inside
wgpu-native with Python's GIL released (wgpu-py calls it through cffi), and one pipeline's work is independent
of another's. So the pipelines wanted together (`PipelineCache.many`: the tasks of a kernel being compiled, with
the pipelines of each chunked serial task's loops) are made on WORKERS threads at once, the largest
shader first. On lavapipe, where the driver's compile is CPU work, that divides the time of a kernel's first
launch by up to the number of cores (two cores: the 124 shaders of Genesis's falling box made in 0.9 s instead
of 1.75 s)."""
from __future__ import annotations

import concurrent.futures
import os
from typing import Any, Sequence

from wgkern.backends.wgsl.shader_module import create_shader_module
from wgkern.errors import InternalCompilerError

# threads making pipelines at once: the cores this process may run on, up to 8
WORKERS = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1), 8)

# (wgsl, pipeline layout, flat, override constants): the arguments of PipelineCache.pipeline
Request = tuple[str, Any, bool, "dict[str, int] | None"]

_executor: tuple[int, concurrent.futures.ThreadPoolExecutor] | None = None


def _threads() -> concurrent.futures.ThreadPoolExecutor:
    """The process's pipeline threads (made again in a forked child, which has none of its parent's)."""
    global _executor
    if _executor is None or _executor[0] != os.getpid():
        _executor = (os.getpid(), concurrent.futures.ThreadPoolExecutor(WORKERS, "wk-pipelines"))
    return _executor[1]


class PipelineCache:
    """The pipelines and shader modules made on one device. `made` counts the pipelines made."""

    def __init__(self, device: Any, gpu_error: type):
        self.device = device
        self.gpu_error = gpu_error           # wgpu.GPUError: naga's rejection of a shader
        self.pipelines: dict[str, Any] = {}
        self.shader_modules: dict[str, Any] = {}
        self.made = 0

    def pipeline(self, wgsl: str, pipeline_layout: Any, flat: bool = False,
                 constants: dict[str, int] | None = None) -> Any:
        """The compute pipeline of a task's WGSL; `flat` sets its `wk_flat` override (TaskDispatch), `constants`
        other overrides (a chunked serial task's loop: serial_chunks.chunk_pipeline_constants)."""
        key = _key(wgsl, pipeline_layout, flat, constants)
        cached = self.pipelines.get(key)
        if cached is None:
            module, [(_, cached)] = self._make(wgsl, self.shader_modules.get(wgsl),
                                               [(key, pipeline_layout, flat, constants)])
            self.shader_modules[wgsl] = module
            self.pipelines[key] = cached
            self.made += 1
        return cached

    def many(self, requests: Sequence[Request]) -> list[Any]:
        """The pipelines of `requests`, those not made yet made on the pipeline threads at once (one job per
        WGSL text, which makes its module and its pipelines). Every job has ended when this returns or raises
        (the first job's error, in the order of `requests`)."""
        missing: dict[str, dict[str, Request]] = {}
        for request in requests:
            key = _key(*request)
            if key not in self.pipelines:
                missing.setdefault(request[0], {})[key] = request
        if WORKERS > 1 and sum(len(keys) for keys in missing.values()) > 1:
            jobs = {wgsl: _threads().submit(self._make, wgsl, self.shader_modules.get(wgsl),
                                            [(key, *request[1:]) for key, request in keyed.items()])
                    for wgsl, keyed in sorted(missing.items(), key=lambda item: -len(item[0]))}
            concurrent.futures.wait(jobs.values())
            failed = None
            for wgsl in missing:                  # in the order of `requests`
                job = jobs[wgsl]
                if job.exception() is not None:
                    failed = failed or job.exception()
                    continue
                module, made = job.result()
                self.shader_modules[wgsl] = module
                self.pipelines.update(made)
                self.made += len(made)
            if failed is not None:
                raise failed
        return [self.pipeline(*request) for request in requests]

    def _make(self, wgsl: str, module: Any, wanted: list[tuple[str, Any, bool, dict[str, int] | None]]
              ) -> tuple[Any, list[tuple[str, Any]]]:
        """(`wgsl`'s shader module, made unless given, and [(key, pipeline)] of each of `wanted`: (key, layout,
        flat, constants)). Runs on any thread: touches none of the cache's state."""
        try:
            if module is None:
                module = create_shader_module(self.device, wgsl)
            made = []
            for key, pipeline_layout, flat, constants in wanted:
                stage = {"module": module, "entry_point": "main"}
                overrides = dict(constants or {})
                if flat and "override wk_flat" in wgsl:
                    overrides["wk_flat"] = 1
                if overrides:
                    stage["constants"] = overrides
                made.append((key, self.device.create_compute_pipeline(layout=pipeline_layout, compute=stage)))
            return module, made
        except self.gpu_error as exc:
            numbered = "\n".join(f"{n + 1:4d}  {line}" for n, line in enumerate(wgsl.splitlines()))
            raise InternalCompilerError(f"naga rejected the generated WGSL: {exc}\n{numbered}") from None

    def clear(self) -> None:
        self.pipelines.clear()
        self.shader_modules.clear()


def _key(wgsl: str, pipeline_layout: Any, flat: bool = False, constants: dict[str, int] | None = None) -> str:
    flat = flat and "override wk_flat" in wgsl
    return f"{id(pipeline_layout)} {flat} {sorted(constants.items()) if constants else ''}\n{wgsl}"
