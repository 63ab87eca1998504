"""The WGSL backend: IR tasks -> WGSL compute shaders run through wgpu-py (Vulkan, Metal, D3D12).

codegen.py/ops.py/types.py/bindings.py generate WGSL; adapters.py picks the adapter and holds the process-wide
device cache; runtime.py is the Backend, with arena.py (packed binding storage) and timing.py (gpu_timer).
Nothing here imports wgpu until an adapter or backend is asked for."""
