"""frontend_cache.py: a start that finds every function, name and attribute a `fastcache=True` kernel's frontend
read unchanged loads the frontend's and forward passes' result; any read that finds something else builds again.

Each test writes its kernels into a module file of its own and "restarts" by making a new program and importing
that file afresh (so the functions, classes and globals are new objects, as in a new process); a count of the
frontend's builds tells a load from a build, and every result is checked against numpy."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern import frontend_cache
from tests.fresh_starts import Sources, starts  # noqa: F401 - starts is a fixture

MODULE = '''
import enum
import wgkern as wk

SCALE = 2.0
N = 8

class Mode(enum.IntEnum):
    ADD = 1
    SUB = 2

class Limits:
    CAP = 100.0
    ADDING = True

class Config:
    def __init__(self, mode, offset):
        self.mode, self.offset = mode, offset

out = wk.field(wk.f32, shape=N)
other = wk.field(wk.f32, shape=N)

@wk.func
def scaled(v):
    return v * SCALE

@wk.kernel(fastcache=True)
def fill(cfg: wk.template()):
    for i in range(N):
        v = scaled(wk.cast(i, wk.f32))
        if wk.static(cfg.mode == Mode.ADD and Limits.ADDING):
            out[i] = wk.min(v + cfg.offset, Limits.CAP)
        else:
            out[i] = v - cfg.offset
        other[i] = out[i] + 1.0
'''


def _expected_fill(scale: float, mode: str, offset: float, cap: float = 100.0, n: int = 8) -> np.ndarray:
    v = np.arange(n, dtype=np.float32) * np.float32(scale)
    return np.minimum(v + np.float32(offset), np.float32(cap)) if mode == "ADD" else v - np.float32(offset)


def _run_fill(module, mode: str = "ADD", offset: float = 1.5) -> np.ndarray:
    module.fill(module.Config(getattr(module.Mode, mode), offset))
    np.testing.assert_array_equal(module.other.to_numpy(), module.out.to_numpy() + np.float32(1.0))
    return module.out.to_numpy()


def test_a_warm_start_loads_the_frontends_result(tmp_path, starts) -> None:
    sources = Sources(tmp_path, MODULE)
    module = starts(sources)
    np.testing.assert_array_equal(_run_fill(module), _expected_fill(2.0, "ADD", 1.5))
    assert starts.builds == ["fill"]
    module = starts(sources)
    np.testing.assert_array_equal(_run_fill(module), _expected_fill(2.0, "ADD", 1.5))
    assert starts.builds == ["fill"], "the second start ran the frontend"
    entry = module.fill.last_compiled
    assert {slot.host for slot in entry.offloaded.containers if slot.kind == "field"} == {module.out, module.other}


@pytest.mark.parametrize("change, expected", [
    (("SCALE = 2.0", "SCALE = 3.0"), dict(scale=3.0)),                                  # a func's global
    (("return v * SCALE", "return v * SCALE * 0.5"), dict(scale=1.0)),                   # a func's source
    (("    CAP = 100.0", "    CAP = 4.0"), dict(cap=4.0)),                               # a class attribute
    (("    ADDING = True", "    ADDING = False"), dict(mode="SUB")),                   # one read in wk.static
    (("N = 8", "N = 6"), dict(n=6)),                                                     # a shape and a bound
])
def test_each_changed_read_builds_again(tmp_path, starts, change, expected) -> None:
    sources = Sources(tmp_path, MODULE)
    _run_fill(starts(sources))
    sources.edit(*change)
    module = starts(sources)
    args = dict(scale=2.0, mode="ADD", offset=1.5) | expected
    np.testing.assert_array_equal(_run_fill(module), _expected_fill(**args))
    assert starts.builds == ["fill", "fill"]
    sources.edit(change[1], change[0])         # back as it was: the first build's entry is found again
    np.testing.assert_array_equal(_run_fill(starts(sources)), _expected_fill(2.0, "ADD", 1.5))
    assert starts.builds == ["fill", "fill"]


def test_template_values_and_options_are_part_of_the_key(tmp_path, starts) -> None:
    sources = Sources(tmp_path, MODULE)
    _run_fill(starts(sources), "ADD", 1.5)
    np.testing.assert_array_equal(_run_fill(starts(sources), "SUB", 1.5), _expected_fill(2.0, "SUB", 1.5))
    np.testing.assert_array_equal(_run_fill(starts(sources), "ADD", 2.5), _expected_fill(2.0, "ADD", 2.5))
    assert starts.builds == ["fill"] * 3
    np.testing.assert_array_equal(_run_fill(starts(sources, debug=True), "ADD", 2.5), _expected_fill(2.0, "ADD", 2.5))
    assert starts.builds == ["fill"] * 4
    _run_fill(starts(sources), "SUB", 1.5)
    assert starts.builds == ["fill"] * 4


ALIASES = '''
import wgkern as wk
a = wk.field(wk.f32, shape=4)
b = wk.field(wk.f32, shape=4)

@wk.kernel(fastcache=True)
def bump():
    for i in range(4):
        a[i] += 1.0
        b[i] += 10.0
'''


def test_which_fields_are_the_same_is_part_of_the_key(tmp_path, starts) -> None:
    sources = Sources(tmp_path, ALIASES)
    module = starts(sources)
    module.bump()
    np.testing.assert_array_equal(module.a.to_numpy(), np.ones(4, np.float32))
    sources.edit("b = wk.field(wk.f32, shape=4)", "b = a")
    module = starts(sources)
    module.bump()
    np.testing.assert_array_equal(module.a.to_numpy(), np.full(4, 11.0, np.float32))
    assert starts.builds == ["bump", "bump"]


def test_kernels_that_do_not_opt_in_run_the_frontend_each_start(tmp_path, starts) -> None:
    sources = Sources(tmp_path, MODULE.replace("@wk.kernel(fastcache=True)", "@wk.kernel"))
    _run_fill(starts(sources))
    np.testing.assert_array_equal(_run_fill(starts(sources)), _expected_fill(2.0, "ADD", 1.5))
    assert starts.builds == ["fill", "fill"]
    assert not (tmp_path / "cache" / frontend_cache.KIND).exists()


HELPERS = '''
ENABLED = True

def is_add(mode):
    return int(mode) == 1 and enabled()

def enabled():
    return ENABLED
'''


def test_static_calls_to_the_programs_functions_are_watched(tmp_path, starts) -> None:
    helpers = Sources(tmp_path, HELPERS)
    sources = Sources(tmp_path, f"import {helpers.name} as helpers\n" + MODULE.replace(
        "wk.static(cfg.mode == Mode.ADD and Limits.ADDING)", "wk.static(helpers.is_add(cfg.mode))"))

    def start(enabled: bool = True):
        helpers.load().ENABLED = enabled            # a global set at run time: the file is the same
        return starts(sources)

    _run_fill(start())
    np.testing.assert_array_equal(_run_fill(start()), _expected_fill(2.0, "ADD", 1.5))
    assert starts.builds == ["fill"]
    np.testing.assert_array_equal(_run_fill(start(enabled=False)), _expected_fill(2.0, "SUB", 1.5))
    assert starts.builds == ["fill"] * 2, "a global the callee's callee reads changed"
    helpers.edit("return ENABLED", "return not ENABLED")        # the callee's callee's code, in another file
    np.testing.assert_array_equal(_run_fill(start(enabled=False)), _expected_fill(2.0, "ADD", 1.5))
    assert starts.builds == ["fill"] * 3
    helpers.edit("return not ENABLED", "return ENABLED")
    np.testing.assert_array_equal(_run_fill(start()), _expected_fill(2.0, "ADD", 1.5))
    assert starts.builds == ["fill"] * 3, "back as it was: the first entry"


@pytest.mark.parametrize("edit", [
    # a wk.static expression that calls a Python function that prints (compiled code, whose reads are not seen)
    ("wk.static(cfg.mode == Mode.ADD and Limits.ADDING)", "wk.static(is_add(cfg.mode))"),
    # a func made inside a function cannot be found again by its module and name
    ("@wk.func\ndef scaled(v):\n    return v * SCALE",
     "def _make():\n    @wk.func\n    def scaled(v):\n        return v * SCALE\n    return scaled\nscaled = _make()"),
])
def test_reads_that_cannot_be_checked_store_nothing(tmp_path, starts, edit) -> None:
    text = MODULE.replace(*edit) + "\ndef is_add(mode):\n    print(mode)\n    return mode == Mode.ADD\n"
    sources = Sources(tmp_path, text)
    _run_fill(starts(sources))
    np.testing.assert_array_equal(_run_fill(starts(sources)), _expected_fill(2.0, "ADD", 1.5))
    assert starts.builds == ["fill", "fill"]
    assert not list((tmp_path / "cache" / frontend_cache.KIND).glob("*" + frontend_cache._ENTRY))


GRADIENT = '''
import wgkern as wk
x = wk.field(wk.f32, shape=4, needs_grad=True)
loss = wk.field(wk.f32, shape=(), needs_grad=True)
steps = wk.field(wk.i32, shape=4)

@wk.kernel(fastcache=True)
def power():
    for i in range(4):
        v = 1.0
        for _ in range(steps[i]):          # a trip count known only at run time: adstacks
            v = v * x[i]
        loss[None] += v
'''


def test_gradients_through_a_loaded_result(tmp_path, starts) -> None:
    sources = Sources(tmp_path, GRADIENT)
    values = np.array([0.5, 1.5, -2.0, 1.25], np.float32)
    counts = np.array([3, 1, 4, 2], np.int32)
    grads = []
    for _ in range(2):
        module = starts(sources)
        module.x.from_numpy(values)
        module.steps.from_numpy(counts)
        with wk.ad.Tape(loss=module.loss):
            module.power()
        np.testing.assert_allclose(module.loss.to_numpy(), np.sum(values.astype(np.float64) ** counts), rtol=1e-6)
        grads.append(module.x.grad.to_numpy())
    assert starts.builds == ["power"]
    closed_form = counts * values.astype(np.float64) ** (counts - 1)
    np.testing.assert_allclose(grads[1], closed_form, rtol=1e-6)     # a few f32 products: ~1e-7 each
    np.testing.assert_array_equal(grads[0], grads[1])


def test_a_damaged_entry_is_built_again(tmp_path, starts) -> None:
    sources = Sources(tmp_path, MODULE)
    _run_fill(starts(sources))
    for entry in (tmp_path / "cache" / frontend_cache.KIND).glob("*" + frontend_cache._ENTRY):
        entry.write_bytes(b"\x80\x04not a pickle")
    np.testing.assert_array_equal(_run_fill(starts(sources)), _expected_fill(2.0, "ADD", 1.5))
    assert starts.builds == ["fill", "fill"]


def test_pure_marks_a_kernel_either_side_of_the_decorator() -> None:
    @wk.pure
    @wk.kernel
    def above():
        pass

    @wk.kernel
    @wk.pure
    def below():
        pass

    assert above.fastcache and below.fastcache and wk.kernel(pure=True)(lambda: None).fastcache
