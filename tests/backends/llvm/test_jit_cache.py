"""The CPU JIT's module reuse and offline cache (backends/llvm/jit.py, disk_cache.py): a kernel's
object code compiled in one process is loaded by the next one instead of being compiled again, and gives the
same results; wk.init(offline_cache=False) neither reads nor writes the cache; the same module compiled twice in
one process is added to the engine once."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

import wgkern as wk
from wgkern.backends.llvm import jit

_PROGRAM = textwrap.dedent("""
    import json, sys
    import numpy as np
    import wgkern as wk
    from wgkern.backends.llvm import jit
    # fast_math off: the kernels stay scalar (lanes.py) and the backward calls the sincos runtime module
    wk.init(arch=wk.cpu, offline_cache=sys.argv[1] == "on", fast_math=False)
    x = wk.field(wk.f32, shape=64, needs_grad=True)
    n = wk.field(wk.i32, shape=64)
    loss = wk.field(wk.f32, shape=(), needs_grad=True)

    @wk.kernel
    def chain():
        for i in x:
            v = x[i]
            for _ in range(n[i]):
                v = wk.sin(v) + SALT
            loss[None] += v

    x.from_numpy(np.linspace(0, 1, 64, dtype=np.float32))
    n.from_numpy((np.arange(64) % 5).astype(np.int32))
    chain()
    loss.grad[None] = 1.0
    chain.grad()
    state = jit.host_jit()
    print(json.dumps({"loss": float(loss[None]), "grad": x.grad.to_numpy().tolist(),
                      "hits": state.disk_hits, "stores": state.disk_stores}))
""")


def _run(tmp_path, cache: str, salt: str = "0.1") -> dict:
    script = tmp_path / "program.py"
    script.write_text(_PROGRAM.replace("SALT", salt))
    env = dict(os.environ, WK_CACHE_DIR=str(tmp_path / "cache"))
    out = subprocess.run([sys.executable, str(script), cache], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_later_process_loads_the_object_code(tmp_path) -> None:
    first = _run(tmp_path, "on")
    assert first["hits"] == 0 and first["stores"] == 3         # forward, backward, the sincos runtime module
    stored = sorted(p.name for p in (tmp_path / "cache" / "cpu").iterdir())
    assert len(stored) == 3 and all(name.endswith(".o") for name in stored)
    second = _run(tmp_path, "on")
    assert second["hits"] == 3 and second["stores"] == 0
    assert second["loss"] == first["loss"] and second["grad"] == first["grad"]
    assert sorted(p.name for p in (tmp_path / "cache" / "cpu").iterdir()) == stored
    changed = _run(tmp_path, "on", salt="0.2")                  # another constant: another module, compiled
    assert changed["hits"] == 1 and changed["stores"] == 2      # (the sincos module is the same)
    assert changed["loss"] != first["loss"]


def test_offline_cache_off_neither_reads_nor_writes(tmp_path) -> None:
    _run(tmp_path, "on")
    off = _run(tmp_path, "off")
    assert off["hits"] == 0 and off["stores"] == 0
    (tmp_path / "cache" / "cpu").rename(tmp_path / "moved")
    _run(tmp_path, "off")
    assert not (tmp_path / "cache" / "cpu").exists()


def test_the_same_module_is_compiled_once_per_process() -> None:
    wk.reset()
    wk.init(arch=wk.cpu, offline_cache=False)
    values = wk.field(wk.f32, shape=16)

    def make():
        @wk.kernel
        def scale(a: wk.f32):
            for i in values:
                values[i] = values[i] * a + 1.0
        return scale

    first, second = make(), make()
    first(2.0)
    modules = len(jit.host_jit().modules)
    second(3.0)                                        # another Kernel object, the same generated module
    assert len(jit.host_jit().modules) == modules
    np.testing.assert_allclose(values.to_numpy(), np.full(16, 4.0))
    wk.reset()
    wk.init(arch=wk.cpu, offline_cache=False)          # a new program compiles the same text: reused again
    values = wk.field(wk.f32, shape=16)
    make()(1.0)
    assert len(jit.host_jit().modules) == modules
    np.testing.assert_allclose(values.to_numpy(), np.ones(16))
