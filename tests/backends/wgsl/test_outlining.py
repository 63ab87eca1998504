"""Large blocks of a serial task's WGSL moved into functions (backends/wgsl/outlining.py), checked with a low
OUTLINE_LINES so that small kernels have them: results equal numpy's on every arch; on Vulkan the functions are
there, take written locals by pointer and values by value, nest, compute the launch-argument expressions they read
again, go with their chunked loop's code, and blocks that can leave early (a break of a loop around them, a
return) stay where they are. (`WK_OUTLINE_LINES=1` runs any test with every block that can be a function made
one.)"""
from __future__ import annotations

import re

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.wgsl import outlining
from wgkern.backends.wgsl.serial_chunks import chunk_loop_source
from wgkern.backends.wgsl.shader_common import LLVMPIPE_UNROLL, LOOP_LIMIT_ITERATIONS


@pytest.fixture
def small_blocks(monkeypatch):
    monkeypatch.setattr(outlining, "OUTLINE_LINES", 6)


def _on_vulkan(arch) -> bool:
    return arch == wk.vulkan


def _functions(source: str) -> dict[str, str]:
    """The outlined functions of `source` by name, each its text."""
    return dict(re.findall(r"^fn (wk_part\d+)\((.*?)^}$", source, re.S | re.M))


def _calls_match_definitions(source: str) -> None:
    called = set(re.findall(r"(?<!fn )\b(wk_part\d+)\(", source))
    defined = set(_functions(source))
    assert called == defined, (called, defined)


def _leaves_only_its_own_loops(function: str) -> None:
    """Every `break` and `continue` of `function`'s text is inside a loop of that text, and it has no return."""
    opened = []
    for line in function.splitlines()[1:]:
        code = line.split("//")[0].strip()
        if code.startswith("loop {") and code.endswith("}"):         # a one-line loop (the loop-limit probe)
            continue
        if ("break;" in code or "continue;" in code) and "loop" not in opened:
            raise AssertionError(f"leaves the function early: {line.strip()}")
        assert not code.startswith("return")
        for at, char in enumerate(code):
            if char == "{":
                opened.append("loop" if code[:at].strip() == "loop" else "block")
            elif char == "}":
                opened.pop()


def test_large_blocks_become_functions_with_the_same_results(arch, small_blocks) -> None:
    envs, width = 6, 37
    data = wk.ndarray(wk.i32, (envs, width))
    out = wk.ndarray(wk.i32, (envs,))

    @wk.kernel
    def solver(data: wk.types.ndarray(), out: wk.types.ndarray(), n: wk.i32):
        wk.loop_config(serialize=True)
        for e in range(data.shape[0]):
            acc = 0
            scale = e * 3 + 1
            for i in range(n):
                x = data[e, i]
                if x % 2 == 0:
                    for j in wk.static(range(4)):
                        x = (x * (j + 2) + scale) % 1009
                    acc += x
                else:
                    acc -= x
                    if x > 50:
                        acc += 7 * scale
            out[e] = acc

    values = (np.arange(envs * width, dtype=np.int64).reshape(envs, width) * 37) % 101
    data.from_numpy(values.astype(np.int32))
    solver(data, out, width)
    want = []
    for e in range(envs):
        acc, scale = 0, e * 3 + 1
        for x in values[e]:
            if x % 2 == 0:
                for j in range(4):
                    x = (x * (j + 2) + scale) % 1009
                acc += x
            else:
                acc -= x
                if x > 50:
                    acc += 7 * scale
        want.append(acc)
    np.testing.assert_array_equal(out.to_numpy(), want)
    if _on_vulkan(arch):
        source = solver.source(arch)
        functions = _functions(source)
        assert len(functions) >= 2                                   # the loop body, and blocks inside it
        assert any("ptr<function, i32>" in text.split(")")[0] for text in functions.values())   # acc
        assert any(re.search(r"\(\*l\d+_acc\)", text) for text in functions.values())
        _calls_match_definitions(source)


def test_blocks_that_can_leave_early_stay_in_place(arch, small_blocks) -> None:
    out = wk.ndarray(wk.i32, (8,))

    @wk.kernel
    def leaves(out: wk.types.ndarray(), limit: wk.i32):
        wk.loop_config(serialize=True)
        for e in range(out.shape[0]):
            acc = 0
            k = 0
            while True:
                k += 1
                if acc > limit:
                    acc += e
                    acc = acc * 3 % 1000
                    acc -= k
                    break
                acc += k * (e + 1)
            out[e] = acc

    @wk.func
    def settle(acc: wk.i32, e: wk.i32) -> wk.i32:
        if acc > 500:
            return acc % 100 + e
        acc = acc * 3 + 1
        acc = acc % 1000
        return acc - e

    @wk.kernel
    def returns(out: wk.types.ndarray()):
        wk.loop_config(serialize=True)
        for e in range(out.shape[0]):
            acc = e * 97
            for r in range(3):
                acc = settle(acc, e) + r
            out[e] = acc

    leaves(out, 40)
    want = []
    for e in range(8):
        acc = k = 0
        while True:
            k += 1
            if acc > 40:
                acc = (acc + e) * 3 % 1000 - k
                break
            acc += k * (e + 1)
        want.append(acc)
    np.testing.assert_array_equal(out.to_numpy(), want)
    returns(out)
    want = []
    for e in range(8):
        acc = e * 97
        for r in range(3):
            acc = (acc % 100 + e if acc > 500 else (acc * 3 + 1) % 1000 - e) + r
        want.append(acc)
    np.testing.assert_array_equal(out.to_numpy(), want)
    if _on_vulkan(arch):
        for kernel in (leaves, returns):
            source = kernel.source(arch)
            for text in _functions(source).values():
                _leaves_only_its_own_loops(text)
            _calls_match_definitions(source)


def test_each_chunked_loops_functions_go_with_its_code(arch, small_blocks) -> None:
    n = LLVMPIPE_UNROLL * LOOP_LIMIT_ITERATIONS + 77       # past one invocation's budget: the loops run in chunks
    data = wk.ndarray(wk.i32, (n,))

    @wk.kernel
    def two(data: wk.types.ndarray()):
        for k in wk.static(range(2)):
            wk.loop_config(serialize=True)
            for i in range(data.shape[0]):
                x = data[i]
                if x % 3 == k:
                    x = x * 5 + k
                    x = x % 7919
                    x = x * 2 + 1
                data[i] = x

    values = np.arange(n, dtype=np.int64) % 1000
    data.from_numpy(values.astype(np.int32))
    two(data)
    want = values.copy()
    for k in range(2):
        hit = want % 3 == k
        want[hit] = (want[hit] * 5 + k) % 7919 * 2 + 1
    np.testing.assert_array_equal(data.to_numpy(), want)
    if _on_vulkan(arch) and "override wk_chunk_loop" in two.source(arch):
        source = two.source(arch)
        everything = set(_functions(source))
        own = [set(_functions(chunk_loop_source(source, k))) for k in range(2)]
        assert own[0] and own[1] and not own[0] & own[1] and own[0] | own[1] == everything
        for k in range(2):
            _calls_match_definitions(chunk_loop_source(source, k))
