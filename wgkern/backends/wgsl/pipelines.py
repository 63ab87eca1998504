"""The compute pipelines of a WgslBackend: one per (pipeline layout, override constants, WGSL), with the shader
module of each WGSL text made once and shared by its pipelines."""
from __future__ import annotations

from typing import Any

from wgkern.backends.wgsl.shader_module import create_shader_module
from wgkern.errors import InternalCompilerError


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
        flat = flat and "override wk_flat" in wgsl
        key = f"{id(pipeline_layout)} {flat} {sorted(constants.items()) if constants else ''}\n{wgsl}"
        cached = self.pipelines.get(key)
        if cached is None:
            try:
                module = self.shader_modules.get(wgsl)
                if module is None:
                    module = self.shader_modules[wgsl] = create_shader_module(self.device, wgsl)
                stage = {"module": module, "entry_point": "main"}
                overrides = dict(constants or {})
                if flat:
                    overrides["wk_flat"] = 1
                if overrides:
                    stage["constants"] = overrides
                cached = self.device.create_compute_pipeline(layout=pipeline_layout, compute=stage)
            except self.gpu_error as exc:
                numbered = "\n".join(f"{n + 1:4d}  {line}" for n, line in enumerate(wgsl.splitlines()))
                raise InternalCompilerError(f"naga rejected the generated WGSL: {exc}\n{numbered}") from None
            self.pipelines[key] = cached
            self.made += 1
        return cached

    def clear(self) -> None:
        self.pipelines.clear()
        self.shader_modules.clear()
