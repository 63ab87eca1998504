"""The backend's pipeline cache (backends/wgsl/pipelines.py): the pipelines wanted together are made on several
threads at once and are the ones made one at a time (same cache keys, each WGSL text's module made once); a
shader naga rejects raises the compiler's error after every other job of the batch has ended, with those
pipelines kept, so the backend stays usable; and a kernel's first launch makes the pipelines of all the chunked
loops it runs in one batch."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.wgsl import pipelines as wpipelines
from wgkern.errors import InternalCompilerError
from wgkern.runtime import program as program_module


def _shader(value: int, extra: str = "") -> str:
    return (f"// pipeline test {value}\n@group(0) @binding(1) var<storage, read_write> out: array<u32>;\n"
            f"override wk_flat: bool = false;\noverride wk_chunk_loop: u32 = 0u;\n"
            f"@compute @workgroup_size(1)\nfn main() {{ out[0] = {value}u + wk_chunk_loop + u32(wk_flat);{extra} }}\n")


def _layout(backend):
    return backend.pipeline_layout(1)


def test_a_batch_makes_each_pipeline_once_and_shares_each_module(backend, monkeypatch) -> None:
    monkeypatch.setattr(wpipelines, "WORKERS", 2)          # threads even on a one-core machine
    cache = wpipelines.PipelineCache(backend.device, backend._wgpu.GPUError)
    layout = _layout(backend)
    requests = [(_shader(1), layout, True, None), (_shader(2), layout, False, {"wk_chunk_loop": 1}),
                (_shader(2), layout, False, {"wk_chunk_loop": 2}), (_shader(1), layout, True, None),
                (_shader(3), layout, False, None)]
    made = cache.many(requests)
    assert cache.made == 4 and len(cache.shader_modules) == 3
    assert made[0] is made[3] and len({id(p) for p in made}) == 4
    # one at a time, the same keys: nothing made again
    assert [cache.pipeline(*request) for request in requests] == made and cache.made == 4
    assert cache.many(requests) == made


def test_a_rejected_shader_raises_after_the_batch_and_keeps_the_others(backend, monkeypatch) -> None:
    monkeypatch.setattr(wpipelines, "WORKERS", 2)
    cache = wpipelines.PipelineCache(backend.device, backend._wgpu.GPUError)
    layout = _layout(backend)
    bad = _shader(5, " let broken: u32 = 1.5;")
    requests = [(_shader(4), layout, False, None), (bad, layout, False, None), (_shader(6), layout, False, None)]
    with pytest.raises(InternalCompilerError, match="naga rejected the generated WGSL") as caught:
        cache.many(requests)
    assert "let broken: u32 = 1.5;" in str(caught.value)       # the shader, numbered, in the message
    assert cache.made == 2 and bad not in cache.shader_modules
    good = cache.pipeline(*requests[2])
    assert cache.made == 2 and good is cache.many([requests[0], requests[2]])[1]


def test_a_kernel_makes_its_chunked_loops_pipelines_in_one_batch(arch, monkeypatch) -> None:
    """Three serialized loops over more iterations than one invocation's budget on llvmpipe: the kernel asks
    for the pipelines of all three at once, as every launch dispatches each loop, and its launches for none;
    sums exact on every arch."""
    monkeypatch.setattr(wpipelines, "WORKERS", 2)
    from wgkern.backends.wgsl.shader_common import LLVMPIPE_UNROLL, LOOP_LIMIT, LOOP_LIMIT_ITERATIONS
    n = LLVMPIPE_UNROLL * LOOP_LIMIT_ITERATIONS + 99
    data = wk.ndarray(wk.i32, (n,))

    @wk.kernel
    def three(data: wk.types.ndarray()):
        for k in wk.static(range(3)):
            wk.loop_config(serialize=True)
            for i in range(data.shape[0]):
                data[i] = data[i] * 2 + k

    backend = program_module.current().backend
    batches = []
    if LOOP_LIMIT in getattr(backend, "features", ()):
        many = wpipelines.PipelineCache.many
        monkeypatch.setattr(wpipelines.PipelineCache, "many",
                            lambda self, requests: (batches.append(len(requests)), many(self, requests))[1])
    values = np.arange(n, dtype=np.int64) % 13
    data.from_numpy(values.astype(np.int32))
    three(data)
    three(data)
    want = values
    for _ in range(2):
        for k in range(3):
            want = want * 2 + k
    np.testing.assert_array_equal(data.to_numpy(), want.astype(np.int32))
    if LOOP_LIMIT in getattr(backend, "features", ()):
        assert batches == [3]         # the three loops' pipelines with the kernel, none at its launches
        task = three.last_compiled.compiled.tasks[0]
        assert sorted(task.chunk_pipelines) == [0, 1, 2]
