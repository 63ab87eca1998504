"""shader_records.py (a warm start's shaders loaded without generating them: test_code_records.py): a record
that disagrees with the build is ignored (the shaders generated again, and recorded again); the loop-limit site
a recorded shader names is this process's (registered again when it loads), so a run cut short on llvmpipe
names the kernel and loop that ran."""
from __future__ import annotations

import ast
import re
import zlib

import numpy as np
import pytest

import wgkern as wk
from wgkern import disk_cache
from wgkern.backends import code_records
from wgkern.backends.wgsl.shader_common import LOOP_LIMIT
from wgkern.backends.wgsl.task_mains import SITE_NAME
from wgkern.runtime import program as program_module
from tests.backends.test_code_records import _expected_wave, generated  # noqa: F401 - a fixture
from tests.fresh_starts import Sources, starts  # noqa: F401 - starts is a fixture

KERNELS = '''
import wgkern as wk

x = wk.field(wk.f32, shape=64)
out = wk.field(wk.i32, shape=4)

@wk.kernel(fastcache=True)
def wave(a: wk.f32, n: wk.i32):
    for i in range(n):
        x[i] = wk.sin(a * i) + wk.sqrt(wk.cast(i, wk.f32))

@wk.kernel(fastcache=True)
def count_up(n: wk.i32):
    head = 0
    while head < n:              # one serial loop of n iterations
        head += 1
    out[0] = head

@wk.kernel(fastcache=True)
def count_down(n: wk.i32):
    left = n
    while left > 0:
        left -= 2
    out[1] = left
'''


def _records(tmp_path) -> list:
    return sorted((tmp_path / "cache" / code_records.KIND).glob("*.wgsl"))


def test_a_record_that_disagrees_with_the_build_is_ignored(tmp_path, starts, generated, wgsl) -> None:
    sources = Sources(tmp_path, KERNELS)
    starts(sources).wave(0.5, 40)
    [path] = _records(tmp_path)
    stored = disk_cache.load(code_records.KIND, path.stem, path.suffix)
    fingerprint, tasks = ast.literal_eval(zlib.decompress(stored).decode())
    members = (("other", "u32"), *fingerprint[0])
    disk_cache.store(code_records.KIND, path.stem, path.suffix,
                     zlib.compress(repr(((members, *fingerprint[1:]), tasks)).encode()))
    module = starts(sources)
    module.wave(0.5, 40)
    np.testing.assert_allclose(module.x.to_numpy(), _expected_wave(0.5, 40), rtol=2e-6, atol=2e-6)
    assert generated == ["wave", "wave"]
    assert disk_cache.load(code_records.KIND, path.stem, path.suffix) == stored      # rewritten by the build
    disk_cache.store(code_records.KIND, path.stem, path.suffix, b"not a record")
    starts(sources).wave(0.5, 40)
    assert generated == ["wave", "wave", "wave"]


def test_a_recorded_shader_names_this_process_loop_limit_site(tmp_path, starts, generated, wgsl) -> None:
    sources = Sources(tmp_path, KERNELS)
    module = starts(sources)
    module.count_up(1000)
    assert module.out.to_numpy()[0] == 1000
    module = starts(sources)
    module.count_down(1001)          # a site of its own first: count_up's number differs from the last start's
    module.count_up(2000)
    assert module.out.to_numpy()[:2].tolist() == [2000, -1]
    assert generated == ["count_up", "count_down"]
    backend = program_module.current().backend
    if LOOP_LIMIT not in backend.features:
        assert SITE_NAME not in module.count_up.source(wgsl)
        return
    [site] = re.findall(rf"const {SITE_NAME} = (\d+)u;", module.count_up.source(wgsl))
    assert backend.loop_limit_sites[int(site) - 1][0] == "count_up" and int(site) >= 2
    module.count_up(2_000_000)       # past llvmpipe's loop budget: reported, naming the kernel that ran
    with pytest.raises(wk.LoopLimitError, match=r"kernel count_up: lavapipe ended its loop at line \d+ early"):
        module.out.to_numpy()
