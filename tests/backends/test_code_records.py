"""code_records.py: a kernel whose IR came from a frontend cache entry gets its compiled code by the record its
backend kept under that entry's key, without generating the module; a record that disagrees with the build, or
whose code is gone, is ignored (the module generated again); code that holds addresses or numbers of its
process is never recorded. On the WGSL arches the record is the shaders themselves (and
wgsl/test_shader_records.py)."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import wgkern as wk
from wgkern import disk_cache
from wgkern.backends import code_records
from wgkern.backends.llvm import cpu, cuda
from wgkern.backends.wgsl import codegen as wcodegen
from tests.fresh_starts import Sources, starts  # noqa: F401 - starts is a fixture

KERNELS = '''
import wgkern as wk

N = 64
x = wk.field(wk.f32, shape=N)
y = wk.field(wk.f32, shape=N, needs_grad=True)
loss = wk.field(wk.f32, shape=(), needs_grad=True)
trips = wk.field(wk.i32, shape=N)

@wk.kernel(fastcache=True)
def wave(a: wk.f32, n: wk.i32):
    for i in range(n):
        x[i] = wk.sin(a * i) + wk.sqrt(wk.cast(i, wk.f32))

@wk.kernel(fastcache=True)
def chain():
    for i in range(N):
        v = y[i]
        for _ in range(trips[i]):
            v = wk.sin(v)
        loss[None] += v

@wk.kernel(fastcache=True)
def shout(a: wk.f32):
    for i in range(1):
        print("a =", a)
'''

_EMITTERS = {wk.cpu: (cpu, "emit_module"), wk.cuda: (cuda, "emit_cuda_module")}


@pytest.fixture
def generated(monkeypatch, arch):
    """The kernels whose module (WGSL: shaders) the backend generated (its code generator's calls, by kernel
    name)."""
    names: list[str] = []
    if arch in _EMITTERS:
        module, attr = _EMITTERS[arch]
        emit = getattr(module, attr)

        def counted(kernel, *args, **kwargs):
            names.append(kernel.name)
            return emit(kernel, *args, **kwargs)

        monkeypatch.setattr(module, attr, counted)
    elif arch == wk.vulkan:
        generate = wcodegen.WgslCodegen.generate

        def counted_shaders(self):
            names.append(self.kernel.name)
            return generate(self)

        monkeypatch.setattr(wcodegen.WgslCodegen, "generate", counted_shaders)
    return names


def _expected_wave(a: float, n: int) -> np.ndarray:
    i = np.arange(64, dtype=np.float64)
    out = np.sin(np.float32(a) * i.astype(np.float32)).astype(np.float64) + np.sqrt(i)
    out[n:] = 0.0
    return out


def _stored(path) -> tuple:
    return ast.literal_eval(disk_cache.load(code_records.KIND, path.stem, path.suffix).decode())


def _records(tmp_path) -> list:
    return sorted((tmp_path / "cache" / code_records.KIND).glob("*"))


def test_a_warm_start_finds_the_code_without_generating_it(tmp_path, starts, generated, arch) -> None:
    sources = Sources(tmp_path, KERNELS)
    module = starts(sources)
    module.wave(0.5, 40)
    first_source = module.wave.last_compiled.compiled.source()
    np.testing.assert_allclose(module.x.to_numpy(), _expected_wave(0.5, 40), rtol=2e-6, atol=2e-6)
    module = starts(sources)
    module.wave(0.25, 50)             # scalars are arguments: the same code
    np.testing.assert_allclose(module.x.to_numpy(), _expected_wave(0.25, 50), rtol=2e-6, atol=2e-6)
    assert generated == ["wave"], "the second start generated the module again"
    assert len(_records(tmp_path)) == 1
    # the module's text is still there to read (CPU, CUDA: generated when asked for), and the same
    assert module.wave.last_compiled.compiled.source() == first_source
    assert starts.builds == ["wave"]


def test_a_record_that_disagrees_with_the_build_is_ignored(tmp_path, starts, generated, llvm) -> None:
    sources = Sources(tmp_path, KERNELS)
    starts(sources).wave(0.5, 40)
    [path] = _records(tmp_path)
    record = _stored(path)                       # (the layout it was generated against, what it names...)
    disk_cache.store(code_records.KIND, path.stem, path.suffix,
                     repr(((record[0][0] + 8,) + record[0][1:],) + record[1:]).encode())
    module = starts(sources)
    module.wave(0.5, 40)
    np.testing.assert_allclose(module.x.to_numpy(), _expected_wave(0.5, 40), rtol=2e-6, atol=2e-6)
    assert generated == ["wave", "wave"]
    assert _stored(path) == record                          # rewritten by the build
    starts(sources).wave(0.5, 40)
    assert generated == ["wave", "wave"]


def test_a_record_whose_code_is_gone_generates_again(tmp_path, starts, generated, llvm) -> None:
    sources = Sources(tmp_path, KERNELS)
    starts(sources).wave(0.5, 40)
    for path in [*(tmp_path / "cache" / "cuda").glob("*.ptx"), *(tmp_path / "cache" / "cpu").glob("*.o")]:
        path.unlink()
    module = starts(sources)
    module.wave(0.5, 40)
    np.testing.assert_allclose(module.x.to_numpy(), _expected_wave(0.5, 40), rtol=2e-6, atol=2e-6)
    # CUDA loads PTX from the cache at each start; the CPU's JIT engine still holds the module it compiled in
    # this process (test_a_later_process_loads_by_the_record deletes the object code between processes)
    assert generated == (["wave", "wave"] if llvm == wk.cuda else ["wave"])


def test_code_holding_what_only_its_process_knows_is_not_recorded(tmp_path, starts, generated, llvm) -> None:
    sources = Sources(tmp_path, KERNELS)
    for _ in range(2):
        module = starts(sources)
        module.trips.from_numpy(np.arange(64, dtype=np.int32) % 4)
        module.y.from_numpy(np.linspace(0.0, 1.0, 64, dtype=np.float32))
        module.chain()
        module.loss.grad[None] = 1.0
        module.chain.grad()                      # a run-time trip count: adstacks, whose context is in the code
        grad = module.y.grad.to_numpy().astype(np.float64)
        expected = np.ones(64)
        v = np.linspace(0.0, 1.0, 64, dtype=np.float32).astype(np.float64)
        for i in range(64):
            for _ in range(i % 4):
                expected[i] *= np.cos(v[i])
                v[i] = np.sin(v[i])
        np.testing.assert_allclose(grad, expected, rtol=1e-5, atol=1e-6)
        module.shout(1.5)                        # prints: site numbers (CPU), the print buffer's address (CUDA)
        wk.sync()
    starts(sources, debug=True).wave(0.5, 40)   # debug: the error word's address
    starts(sources, debug=True).wave(0.5, 40)
    reverse = [name for name in generated if name != "chain" and name.startswith("chain")]
    assert len(reverse) == 2, "the reverse kernel (adstacks) is generated at each start"
    assert generated.count("chain") == 1, "the forward kernel has no adstack: recorded"
    assert generated.count("shout") == 2
    assert generated.count("wave") == 2
    assert len(_records(tmp_path)) == 1


_PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    import wgkern as wk
    from wgkern.backends.llvm import cpu, jit
    generated = []
    emit = cpu.emit_module
    def counted(kernel, *args, **kwargs):
        generated.append(kernel.name)
        return emit(kernel, *args, **kwargs)
    cpu.emit_module = counted
    wk.init(arch=wk.cpu, fast_math=False)
    x = wk.field(wk.f32, shape=64)

    @wk.kernel(fastcache=True)
    def wave(a: wk.f32):
        for i in x:
            x[i] = wk.sin(a * i) + i

    wave(0.5)
    print(json.dumps({"x": x.to_numpy().tolist(), "generated": generated, "hits": jit.host_jit().disk_hits}))
""")


def _run(tmp_path) -> dict:
    script = tmp_path / "program.py"
    script.write_text(_PROGRAM)
    env = dict(os.environ, WK_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_later_process_loads_by_the_record(tmp_path) -> None:
    expected = (np.sin(np.float32(0.5) * np.arange(64, dtype=np.float32)) + np.arange(64)).astype(np.float32)
    first = _run(tmp_path)
    assert first["generated"] == ["wave"] and first["hits"] == 0
    second = _run(tmp_path)
    assert second["generated"] == [] and second["hits"] >= 1
    for path in (tmp_path / "cache" / "cpu").glob("*.o"):
        path.unlink()                            # the object code gone: the record is not enough
    third = _run(tmp_path)
    assert third["generated"] == ["wave"]
    for run in (first, second, third):
        np.testing.assert_allclose(run["x"], expected, rtol=1e-6, atol=1e-6)
