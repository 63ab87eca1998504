"""WGSL codegen: every IR statement class lowered, validated by naga and run against the reference interpreter;
missing device features reported as CompileError at the statement; naga rejections surfaced with the WGSL."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.backends.wgsl.codegen import WgslCodegen
from wgkern.backends.wgsl.shader_common import LOOP_LIMIT
from wgkern.errors import CompileError, InternalCompilerError, SourceLoc
from wgkern.ir import nodes as ir
from wgkern.ir.ops import AtomicOpKind, BinaryOpKind, UnaryOpKind
from wgkern.ir.visitor import walk
from wgkern.lang import types as T
from wgkern.runtime import program as program_module

from ._kernels import interpret, kernel, range_task, run, scalar_arg, serial_task, slot

ALL_FEATURES = frozenset({"shader-f64", "shader-int64", "shader-f16", "shader-float32-atomic",
                          "shader-int64-atomic-all-ops", "shader-int64-atomic-min-max"})


def every_statement_kernel(n: int, with_return: bool = True) -> ir.OffloadedKernel:
    """A serial task and a range task that between them use every class of ir.STMT_CLASSES. (The reference
    interpreter has no Return rule, so it runs the kernel built without the early return.)"""
    data = slot("data", T.f32, (n,))
    counts = slot("counts", T.i32, (4,))
    nd = slot("nd", T.f32, None, 2, arg_index=1)

    def serial(b):
        total = b.alloca(T.i32, "total")
        outer = b.range_for(b.const(0, T.i32), b.const(10, T.i32))
        with b.at(outer.body):
            j = b.loop_index(outer)
            skip = b.if_(b.binary(BinaryOpKind.CMP_EQ, b.binary(BinaryOpKind.MOD, j, b.const(3, T.i32)),
                                  b.const(0, T.i32)))
            with b.at(skip.then_block):
                b.insert(ir.Continue())
            stop = b.if_(b.binary(BinaryOpKind.CMP_GE, j, b.const(8, T.i32)))
            with b.at(stop.then_block):
                b.insert(ir.Break())
            b.store(total, b.add(b.load(total), j))
        down = b.range_for(b.const(0, T.i32), b.const(4, T.i32), reversed=True)
        with b.at(down.body):
            k = b.loop_index(down)
            b.store(total, b.add(b.mul(b.load(total), b.const(2, T.i32)), k))
        spin = b.while_()
        with b.at(spin.body):
            b.store(total, b.sub(b.load(total), b.const(100, T.i32)))
            done = b.if_(b.binary(BinaryOpKind.CMP_LT, b.load(total), b.const(0, T.i32)))
            with b.at(done.then_block):
                b.insert(ir.Break())
        b.global_store(b.global_ptr(counts, [b.const(0, T.i32)]), b.load(total))
        b.global_store(b.global_ptr(counts, [b.const(1, T.i32)]),
                       b.insert(ir.ShapeOf(container=nd, axis=1, dtype=T.i32)))
        early = b.if_(b.binary(BinaryOpKind.CMP_GT, b.insert(ir.ArgLoad(arg_index=0, dtype=T.i32)),
                               b.const(0, T.i32)))
        with b.at(early.then_block):
            if with_return:
                b.insert(ir.Return())
        b.global_store(b.global_ptr(counts, [b.const(2, T.i32)]), b.const(-5, T.i32))

    def body(b, i):
        x = b.global_load(b.global_ptr(data, [i]))
        noise = b.insert(ir.RandomValue(dtype=T.f32, site=3))
        y = b.select(b.binary(BinaryOpKind.CMP_LT, x, b.const(0.5, T.f32)), b.unary(UnaryOpKind.NEG, x), noise)
        b.global_store(b.global_ptr(data, [i]), b.add(y, b.cast(i, T.f32)))
        row = b.binary(BinaryOpKind.MOD, i, b.insert(ir.ShapeOf(container=nd, axis=0, dtype=T.i32)))
        b.global_store(b.global_ptr(nd, [row, b.const(1, T.i32)]), b.const(7.0, T.f32))
        b.atomic(AtomicOpKind.ADD, b.global_ptr(counts, [b.const(3, T.i32)]), b.const(1, T.i32))
        with b.at(b.insert(ir.If(cond=b.binary(BinaryOpKind.CMP_EQ, i, b.const(n + 1, T.i32)),
                                 then_block=ir.Block(), else_block=ir.Block())).then_block):
            b.insert(ir.Print(values=[x, i], pieces=("x=", " i=", "\n")))      # never runs: i < n

    tasks = [serial_task("serial", serial),
             range_task("range", lambda b: b.const(0, T.i32), lambda b: b.const(n, T.i32), body)]
    args = [scalar_arg("flag", T.i32), ir.ArgSpec(name="nd", kind="ndarray", dtype=T.f32, ndim=2)]
    return kernel("every_statement", [data, counts, nd], tasks, args)


def test_kernel_uses_every_statement_class() -> None:
    k = every_statement_kernel(8)
    used = {type(s) for task in k.tasks for block in (task.bounds, task.body) for s in walk(block)}
    used |= {ir.RangeFor}   # the range task's parallel loop itself
    assert used >= set(ir.STMT_CLASSES), set(ir.STMT_CLASSES) - used


@pytest.mark.parametrize("flag", [0, 1])
def test_every_statement_matches_interpreter(backend, flag: int) -> None:
    n = 300
    k = every_statement_kernel(n)
    rng = np.random.default_rng(1)
    arrays = [rng.random(n, dtype=np.float32), np.zeros(4, np.int32), np.zeros((5, 3), np.float32)]
    want = interpret(every_statement_kernel(n, with_return=False), arrays, [flag, None], launch_id=7, seed=42)
    if flag:
        want[1][2] = 0     # the early return skipped the last store
    got = run(backend, k, arrays, [flag, None], launch_id=7, seed=42)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_generated_wgsl_is_readable(backend) -> None:
    source = backend.compile(every_statement_kernel(8)).source()
    assert "// wgkern kernel 'every_statement', task 'serial' (serial)" in source
    assert "var<storage, read_write> c1_counts: array<atomic<i32>>" in source
    assert "fn main(" in source and "wk_hash(" in source
    assert max(len(line) for line in source.splitlines()) < 160


LOC = SourceLoc("user_kernel.py", 12, 4, "    y = x * 2.0")


@pytest.mark.parametrize("dtype,feature", [(T.f64, "shader-f64"), (T.i64, "shader-int64"),
                                           (T.u64, "shader-int64"), (T.f16, "shader-f16")])
def test_missing_feature_is_a_compile_error(dtype: T.DataType, feature: str) -> None:
    data = slot("data", dtype, (4,))

    def body(b, i):
        ptr = b.global_ptr(data, [i])
        with b.located(LOC):
            b.global_store(ptr, b.mul(b.global_load(ptr), b.const(2, dtype)))

    k = kernel("needs_feature", [data], [range_task("t", lambda b: b.const(0, T.i32),
                                                    lambda b: b.const(4, T.i32), body)])
    WgslCodegen(k, ALL_FEATURES, "test adapter").generate()      # fine with the feature
    with pytest.raises(CompileError) as info:
        WgslCodegen(k, ALL_FEATURES - {feature}, "llvmpipe (test)").generate()
    message = str(info.value)
    assert dtype.name in message and feature in message and "llvmpipe (test)" in message
    assert info.value.loc is not None and info.value.loc.filename in ("user_kernel.py", "<wgkern>")


def test_missing_feature_names_the_statement_location() -> None:
    data = slot("data", T.f32, (4,))

    def body(b, i):
        with b.located(LOC):
            wide = b.cast(b.global_load(b.global_ptr(data, [i])), T.f64)
        b.global_store(b.global_ptr(data, [i]), b.cast(wide, T.f32))

    k = kernel("wide", [data], [range_task("t", lambda b: b.const(0, T.i32), lambda b: b.const(4, T.i32), body)])
    with pytest.raises(CompileError) as info:
        WgslCodegen(k, frozenset(), "no-f64 adapter").generate()
    assert info.value.loc == LOC
    assert "user_kernel.py:12:5" in str(info.value)


def test_int64_atomics_need_their_feature() -> None:
    data = slot("data", T.i64, (4,))

    def body(b, i):
        with b.located(LOC):
            b.atomic(AtomicOpKind.MAX, b.global_ptr(data, [b.const(0, T.i32)]), b.cast(i, T.i64))

    k = kernel("atomic64", [data], [range_task("t", lambda b: b.const(0, T.i32), lambda b: b.const(4, T.i32), body)])
    WgslCodegen(k, ALL_FEATURES, "a").generate()
    with pytest.raises(CompileError, match="shader-int64-atomic-min-max"):
        WgslCodegen(k, ALL_FEATURES - {"shader-int64-atomic-min-max"}, "a").generate()


def test_f16_atomics_use_word_helpers_and_compare_and_swap_is_refused() -> None:
    """An f16 container touched atomically is declared as u32 words of two halves, and every access to it in
    the task (plain loads and stores too) goes through a helper on the word; an f16 compare-and-swap is a
    CompileError at its line."""
    data = slot("data", T.f16, (5,))

    def body(b, i):
        ptr = b.global_ptr(data, [i])
        b.atomic(AtomicOpKind.ADD, ptr, b.const(1.0, T.f16))
        b.global_store(ptr, b.global_load(ptr))

    k = kernel("atomic16", [data], [range_task("t", lambda b: b.const(0, T.i32), lambda b: b.const(5, T.i32), body)])
    wgsl = WgslCodegen(k, ALL_FEATURES, "a").generate()[0].wgsl
    assert "var<storage, read_write> c0_data: array<atomic<u32>>;" in wgsl
    assert "wk_atomic_add_c0_data(" in wgsl and "wk_load_c0_data(" in wgsl and "_ = wk_atomic_store_c0_data(" in wgsl
    assert "c0_data[v" not in wgsl                                   # no direct element access

    def cas(b, i):
        with b.located(LOC):
            b.insert(ir.AtomicOp(op=AtomicOpKind.CAS, ptr=b.global_ptr(data, [i]), value=b.const(1.0, T.f16),
                                 expected=b.const(0.0, T.f16), dtype=T.f16))

    k = kernel("cas16", [data], [range_task("t", lambda b: b.const(0, T.i32), lambda b: b.const(5, T.i32), cas)])
    with pytest.raises(CompileError, match="compare-and-swap on f16 container data") as info:
        WgslCodegen(k, ALL_FEATURES, "a").generate()
    assert info.value.loc == LOC


def test_naga_rejection_is_an_internal_error_with_the_wgsl(backend) -> None:
    layout = backend.pipeline_layout(0)
    with pytest.raises(InternalCompilerError) as info:
        backend.pipeline("fn main() { let x: u32 = 1.5f; }", layout)
    assert "naga rejected" in str(info.value) and "let x: u32 = 1.5f" in str(info.value)


def test_f32_trig_reduction_follows_how_the_adapter_branches() -> None:
    """f32 sin reduces small arguments in f32 and large ones in f64 behind a branch on a GPU; on a CPU adapter
    (both sides of a branch always run) every argument goes through the f64 reduction, with no branch."""
    from wgkern.backends.wgsl.shader_common import MASKED_BRANCHES
    data = slot("data", T.f32, (4,))

    def body(b, i):
        ptr = b.global_ptr(data, [i])
        b.global_store(ptr, b.unary(UnaryOpKind.SIN, b.global_load(ptr)))

    k = kernel("trig", [data], [range_task("t", lambda b: b.const(0, T.i32), lambda b: b.const(4, T.i32), body)])
    gpu = WgslCodegen(k, ALL_FEATURES, "a").generate()[0].wgsl
    cpu = WgslCodegen(k, ALL_FEATURES | {MASKED_BRANCHES}, "a").generate()[0].wgsl
    assert "if (abs(x) < f32(6000.0))" in gpu and "wk_reduce_pio2_f64(f64(x))" in gpu
    assert "if (abs(x)" not in cpu and "wk_reduce_pio2_f64(f64(x))" in cpu
    no_f64 = WgslCodegen(k, ALL_FEATURES - {"shader-f64"} | {MASKED_BRANCHES}, "a").generate()[0].wgsl
    assert "f64(" not in no_f64 and "if (abs(x)" not in no_f64


def test_division_is_the_drivers_own_only_where_allowed(arch) -> None:
    """`/` corrects the driver's quotient with its exact residual unless NATIVE_DIVISION: llvmpipe divides
    exactly, and wk.init(fast_math=True) (the default) accepts a driver's ulps of error as Taichi does; with
    fast_math=False a GPU backend gets the correction."""
    from wgkern.backends.wgsl.shader_common import NATIVE_DIVISION
    data = slot("data", T.f32, (4,))

    def body(b, i):
        ptr = b.global_ptr(data, [i])
        b.global_store(ptr, b.binary(BinaryOpKind.DIV, b.const(1.0, T.f32), b.global_load(ptr)))

    k = kernel("recip", [data], [range_task("t", lambda b: b.const(0, T.i32), lambda b: b.const(4, T.i32), body)])
    corrected = WgslCodegen(k, ALL_FEATURES, "a").generate()[0].wgsl
    native = WgslCodegen(k, ALL_FEATURES | {NATIVE_DIVISION}, "a").generate()[0].wgsl
    assert "fma(-q, b, a)" in corrected and "fma(" not in native and "return a / b;" in native
    backend = program_module.current().backend
    if hasattr(backend, "features"):
        llvmpipe = "llvmpipe" in str(backend.adapter.info.get("device", "")).lower()
        assert (NATIVE_DIVISION in backend.features) == (llvmpipe or backend.fast_math)
        wk.reset()
        wk.init(arch=arch, fast_math=False)
        assert (NATIVE_DIVISION in program_module.current().backend.features) == llvmpipe


# ---- llvmpipe's loop limit (LOOP_LIMIT) -------------------------------------------------------------------

def _loop_limit_kernels():
    out = wk.field(wk.i32, shape=64)

    @wk.kernel
    def serial_while(n: wk.i32):
        head = 0
        while head < n:                 # one serial loop of n iterations
            head += 1
        out[0] = head

    @wk.kernel
    def nested_within_limit(n: wk.i32):
        for i in range(64):
            total = 0
            for j in range(n):          # per thread: 4 * n iterations, the inner loops unrolled or not
                for k in range(4):
                    total += 1
                if j == n + 100:        # an exit of the loop's own that is never taken
                    break
            out[i] = total

    @wk.kernel
    def broken_early(n: wk.i32):
        head = 0
        while True:                     # left by its `break` only
            head += 1
            if head >= n:
                break
        out[1] = head

    return out, serial_while, nested_within_limit, broken_early


def test_loops_past_llvmpipes_limit_are_reported_not_truncated(arch) -> None:
    """lavapipe ends the loops of a shader invocation after 65535 iterations together, silently: on it a
    kernel whose loop ran into that raises LoopLimitError naming the loop; elsewhere the loop runs in full.
    Loops that stay within the limit, and loops left by their own `break`, run without a report."""
    out, serial_while, nested_within_limit, broken_early = _loop_limit_kernels()
    nested_within_limit(10000)
    np.testing.assert_array_equal(out.to_numpy(), np.full(64, 40000))
    broken_early(1000)
    serial_while(60000)
    got = out.to_numpy()
    assert (got[0], got[1]) == (60000, 1000)
    serial_while(200000)                # past 65535 too: a serial loop runs 8 iterations per trip on llvmpipe
    assert out.to_numpy()[0] == 200000
    serial_while(2_000_000)
    if LOOP_LIMIT in getattr(program_module.current().backend, "features", ()):
        with pytest.raises(wk.LoopLimitError, match=r"kernel serial_while: lavapipe ended its loop at line \d+ early"):
            out.to_numpy()
        serial_while(1000)                                 # reported once; the state stays usable
        assert out.to_numpy()[0] == 1000
    else:
        assert out.to_numpy()[0] == 2_000_000


def test_loops_with_small_compile_time_bounds_are_not_watched(arch) -> None:
    """A task whose loops all have compile-time bounds, together far under llvmpipe's limit, gets no watch
    code (it costs compile time and a few percent of run time); a loop bounded at run time does."""
    out = wk.field(wk.f32, shape=64)

    @wk.kernel
    def small():
        for i in out:
            total = 0.0
            for j in range(4096):
                total += j * 0.5
            out[i] = total

    @wk.kernel
    def unbounded(n: wk.i32):
        for i in out:
            total = 0.0
            for j in range(n):
                total += j * 0.5
            out[i] = total

    small()
    unbounded(4096)
    assert out.to_numpy()[0] == sum(j * 0.5 for j in range(4096))
    if LOOP_LIMIT in getattr(program_module.current().backend, "features", ()):
        assert "wk_probe" not in small.source(arch) and "wk_probe" in unbounded.source(arch)


def test_loop_limit_in_parallel_loops_and_before_a_return(arch) -> None:
    """The probe sits where each index's work ends: a parallel loop's index whose `while` ran past the limit
    is reported (naming every loop of the task), and so is a serial task that returns after such a loop; the
    same kernels within the limit return exact results."""
    out = wk.field(wk.i32, shape=8)

    @wk.kernel
    def per_index(n: wk.i32):
        for i in out:
            steps = 0
            while steps < n + i:
                steps += 1
            for k in range(3):
                steps += k
            out[i] = steps

    @wk.kernel
    def returns_count(n: wk.i32) -> wk.i32:
        count = 0
        while count < n:
            count += 1
        return count

    per_index(100)
    np.testing.assert_array_equal(out.to_numpy(), 103 + np.arange(8))
    assert returns_count(5000) == 5000
    if LOOP_LIMIT not in getattr(program_module.current().backend, "features", ()):
        per_index(700000)
        np.testing.assert_array_equal(out.to_numpy(), 700003 + np.arange(8))
        assert returns_count(700000) == 700000
        return
    per_index(700000)
    with pytest.raises(wk.LoopLimitError, match=r"kernel per_index: lavapipe ended one of its loops \(lines \d+, \d+\)"):
        out.to_numpy()
    with pytest.raises(wk.LoopLimitError, match=r"kernel returns_count: lavapipe ended its loop at line \d+ early"):
        returns_count(700000)
    per_index(10)                                           # reported once; the state stays usable
    np.testing.assert_array_equal(out.to_numpy(), 13 + np.arange(8))


@pytest.mark.parametrize("dtype", [T.i32, T.u32, T.i8, T.i64])
def test_bools_become_integers_through_a_bit_field_extract_on_nvidia(backend, monkeypatch, dtype) -> None:
    """OPAQUE_BOOL_INTS (NVIDIA's Vulkan driver, which drops the `or` term of int(p) + 2 * int(q) for
    p = c1 & c2, q = c1 | c2): a bool -> integer cast is spelled as a bit-field extract, and the kernel still
    computes the interpreter's values; other adapters keep the plain select."""
    from wgkern.backends.wgsl.shader_common import OPAQUE_BOOL_INTS
    if dtype.bits == 64 and "shader-int64" not in backend.features:
        pytest.skip("the adapter has no shader-int64")
    ab = slot("ab", T.i32, (4, 2))
    out = slot("out", dtype, (4,))

    def body(b, i):
        c1 = b.binary(BinaryOpKind.CMP_GT, b.global_load(b.global_ptr(ab, [i, b.const(0, T.i32)])), b.const(0, T.i32))
        c2 = b.binary(BinaryOpKind.CMP_GT, b.global_load(b.global_ptr(ab, [i, b.const(1, T.i32)])), b.const(0, T.i32))
        p, q = b.binary(BinaryOpKind.BIT_AND, c1, c2), b.binary(BinaryOpKind.BIT_OR, c1, c2)
        total = b.binary(BinaryOpKind.ADD, b.cast(p, dtype), b.binary(BinaryOpKind.MUL, b.const(2, dtype), b.cast(q, dtype)))
        b.global_store(b.global_ptr(out, [i]), total)

    k = kernel("bools", [ab, out], [range_task("t", lambda b: b.const(0, T.i32), lambda b: b.const(4, T.i32), body)])
    plain = WgslCodegen(k, ALL_FEATURES, "a").generate()[0].wgsl
    opaque = WgslCodegen(k, ALL_FEATURES | {OPAQUE_BOOL_INTS}, "a").generate()[0].wgsl
    assert "extractBits(select(0u, 0xffffffffu," not in plain and plain.count("select(0") >= 2
    assert opaque.count("extractBits(select(0u, 0xffffffffu,") == 2
    monkeypatch.setattr(backend, "features", backend.features | {OPAQUE_BOOL_INTS})
    arrays = [np.array([[0, 1], [1, 0], [1, 1], [0, 0]], np.int32), np.zeros(4, dtype.np_dtype)]
    got = run(backend, k, arrays)
    np.testing.assert_array_equal(got[1], [2, 2, 3, 0])
    np.testing.assert_array_equal(got[1], interpret(k, arrays)[1])


def test_serial_while_exiting_on_memory_runs_once_on_llvmpipe(arch) -> None:
    """A serial task's `while` that exits on a value read from memory, after a nested loop: on llvmpipe the
    masked-off SIMD lanes of a one-invocation workgroup kept looping until the driver's loop budget ran out
    (and the loop-limit probe reported it); serial tasks there run in a workgroup whose extra invocations
    return at once. Exact results and no LoopLimitError on every arch."""
    counter = wk.field(wk.i32, shape=())
    hits = wk.field(wk.i32, shape=16)

    @wk.kernel
    def count_down():
        while True:
            for i in range(16):
                hits[i] += 1
            for _ in range(1):
                counter[None] -= 1
            if counter[None] == 0:
                break

    for start in (5, 1, 40):
        hits.fill(0)
        counter[None] = start
        count_down()
        assert counter[None] == 0 and hits.to_numpy().tolist() == [start] * 16
    if LOOP_LIMIT in getattr(program_module.current().backend, "features", ()):
        from wgkern.backends.wgsl.shader_common import LLVMPIPE_SERIAL_LANES
        source = count_down.source(arch)
        assert f"@workgroup_size({LLVMPIPE_SERIAL_LANES})" in source and "if (wk_local_index != 0u) { return; }" in source


def test_long_serial_loops_run_several_iterations_per_trip_on_llvmpipe(arch) -> None:
    """A serial loop of 300000 iterations, in a serial task and in Taichi's `for _ in range(1):` idiom: on
    llvmpipe (one loop budget of 65535 iterations per invocation) such loops run LLVMPIPE_UNROLL iterations per
    trip and finish, with every trip count's remainder right; other arches run them as written."""
    from wgkern.backends.wgsl.shader_common import LLVMPIPE_UNROLL
    n = 300_000
    a = wk.field(wk.i32, shape=n)
    total = wk.field(wk.i64, shape=())

    @wk.kernel
    def running_sum(m: wk.i32):
        acc = 0
        for _ in range(1):
            for i in range(m):
                acc += i % 7
                a[i] = acc
        total[None] = acc

    @wk.kernel
    def serial_sum(m: wk.i32) -> wk.i64:
        acc = wk.i64(0)
        for i in range(m):
            acc += i % 5
        return acc

    want = np.cumsum(np.arange(n) % 7)
    running_sum(n)
    np.testing.assert_array_equal(a.to_numpy(), want)
    assert total[None] == want[-1]
    assert serial_sum(n) == int((np.arange(n) % 5).sum())
    for m in (0, 1, LLVMPIPE_UNROLL - 1, LLVMPIPE_UNROLL, LLVMPIPE_UNROLL + 1, 2 * LLVMPIPE_UNROLL + 3):
        a.fill(-1)
        running_sum(m)
        got = a.to_numpy()
        np.testing.assert_array_equal(got[:m], want[:m])
        assert got[m] == -1 and total[None] == (want[m - 1] if m else 0)
        assert serial_sum(m) == int((np.arange(m) % 5).sum())
    if LOOP_LIMIT in getattr(program_module.current().backend, "features", ()):
        assert f">= {LLVMPIPE_UNROLL}u) {{" in running_sum.source(arch)


def test_nested_serial_loops_stretch_their_innermost_loop_on_llvmpipe(arch) -> None:
    """A serialized outer loop around an inner loop (a dynamic-programming table, 300 x 300 = 90000 inner
    iterations): the innermost loop is the one copied on llvmpipe, so the whole table fits the budget."""
    n = 300
    table = wk.field(wk.i32, shape=(n + 1, n + 1))

    @wk.kernel
    def fill(m: wk.i32):
        wk.loop_config(serialize=True)
        for i in range(1, m + 1):
            for j in range(1, m + 1):
                table[i, j] = max(table[i - 1, j], table[i, j - 1]) + (i * j) % 3 // 2

    fill(n)
    want = np.zeros((n + 1, n + 1), np.int64)
    for i in range(1, n + 1):
        for j in range(1, n + 1):
            want[i, j] = max(want[i - 1, j], want[i, j - 1]) + (i * j) % 3 // 2
    np.testing.assert_array_equal(table.to_numpy(), want)


def test_large_serial_loop_bodies_keep_one_copy_on_llvmpipe(arch) -> None:
    """An innermost serial loop whose body is over LLVMPIPE_UNROLL_MAX_STMTS statements (here a 3x3 matrix
    product per row, unrolled by wk.static) is not copied for llvmpipe's loop budget: its copies would multiply
    the shader, and llvmpipe's compile time grows faster than the shader. It runs right within the budget, and
    past it too, in chunks of one dispatch each (test_serial_chunks.py; small bodies are still copied:
    test_long_serial_loops_run_several_iterations_per_trip_on_llvmpipe)."""
    from wgkern.backends.wgsl.shader_common import LLVMPIPE_UNROLL, LLVMPIPE_UNROLL_MAX_STMTS
    rows = 70000
    m = wk.ndarray(wk.f32, (rows, 3, 3))
    out = wk.ndarray(wk.f32, (rows, 3, 3))

    @wk.kernel
    def squares(m: wk.types.ndarray(), out: wk.types.ndarray(), n: wk.i32):
        wk.loop_config(serialize=True)
        for r in range(n):
            for i, j in wk.static(wk.ndrange(3, 3)):
                acc = 0.0
                for k in wk.static(range(3)):
                    acc += m[r, i, k] * m[r, k, j]
                out[r, i, j] = acc

    values = ((np.arange(rows * 9) % 13) - 6).astype(np.float32).reshape(rows, 3, 3)   # products exact in f32
    m.from_numpy(values)
    squares(m, out, 1000)
    np.testing.assert_array_equal(out.to_numpy()[:1000], np.matmul(values[:1000], values[:1000]))
    if LOOP_LIMIT in getattr(program_module.current().backend, "features", ()):
        assert "LOOP_LIMIT: several iterations per trip" not in squares.source(arch)
        assert sum(1 for _ in walk(squares.last_compiled.offloaded.tasks[0].body)) > LLVMPIPE_UNROLL_MAX_STMTS
    squares(m, out, rows)               # past the 65535 iterations of one invocation
    np.testing.assert_array_equal(out.to_numpy(), np.matmul(values, values))


def test_a_serial_task_copies_loop_bodies_within_a_budget_on_llvmpipe(arch) -> None:
    """Many small innermost serial loops (here 12): on llvmpipe the first ones in program
    order get LLVMPIPE_UNROLL copies until the copies have added LLVMPIPE_COPIES_PER_TASK statements, and the
    rest keep one copy; every loop computes its sum on every arch."""
    from wgkern.backends.wgsl.shader_common import LLVMPIPE_COPIES_PER_TASK, LLVMPIPE_UNROLL
    loops = 12
    out = wk.ndarray(wk.i32, (loops,))

    @wk.kernel
    def sums(out: wk.types.ndarray(), n: wk.i32):
        wk.loop_config(serialize=True)
        for _ in range(1):
            for k in wk.static(range(loops)):
                acc = 0
                for i in range(n):
                    acc += (i * (k + 3)) % 7 + (i // (k + 2)) % 5
                out[k] = acc

    n = 1000
    sums(out, n)
    want = [sum((i * (k + 3)) % 7 + (i // (k + 2)) % 5 for i in range(n)) for k in range(loops)]
    np.testing.assert_array_equal(out.to_numpy(), want)
    if LOOP_LIMIT in getattr(program_module.current().backend, "features", ()):
        copied = sums.source(arch).count("LOOP_LIMIT: several iterations per trip")
        inner = [s for s in walk(sums.last_compiled.offloaded.tasks[0].body) if isinstance(s, ir.RangeFor)
                 and not any(isinstance(t, ir.RangeFor) for t in walk(s.body))]
        sizes = {sum(1 for _ in walk(loop.body)) for loop in inner}
        assert len(inner) == loops and len(sizes) == 1      # twelve loops of one size
        assert copied == LLVMPIPE_COPIES_PER_TASK // (LLVMPIPE_UNROLL * sizes.pop()) and 0 < copied < loops


def test_loop_indices_skip_the_names_of_wgsl_scalar_types(backend) -> None:
    # 70 loops in a row, each taking one fresh name (its index, i<counter>): the counter passes 32 and 64, and
    # `var i32 = 0i;` made naga reject the shader (i32 must resolve to a type there)
    data = slot("data", T.i32, (4,))

    def body(b, index):
        total = b.alloca(T.i32, "total")
        for _ in range(70):
            b.range_for(b.const(0, T.i32), b.const(2, T.i32))
        last = b.range_for(b.const(0, T.i32), b.const(3, T.i32))
        with b.at(last.body):
            b.store(total, b.add(b.load(total), b.loop_index(last)))
        b.global_store(b.global_ptr(data, [index]), b.add(b.load(total), index))

    k = kernel("many_loops", [data], [range_task("loops", lambda b: b.const(0, T.i32), lambda b: b.const(4, T.i32),
                                                 body)])
    source = backend.compile(k).source()
    names = {line.split()[1] for line in source.splitlines() if line.strip().startswith("var i")}
    assert {"i31", "i33", "i63", "i65"} <= names and not names & {"i8", "i16", "i32", "i64"}
    got = run(backend, k, [np.zeros(4, np.int32)], [])
    np.testing.assert_array_equal(got[0], 3 + np.arange(4))


@pytest.mark.parametrize("d", [4, 0, -3])
def test_floor_division_and_modulo_of_nonnegative_values_are_wgsls_own(arch, d) -> None:
    """`//` and `%` of values >= 0 by construction (an index decomposed by an extent, a divisor max(d, 0)) are
    WGSL's truncating `/` with x // 0 == x % 0 == 0, as Python's floor; others keep the floor helpers."""
    a = wk.ndarray(wk.i32, (3, 5))
    out = wk.ndarray(wk.i32, (15, 4))

    @wk.kernel
    def split(a: wk.types.ndarray(), out: wk.types.ndarray(), d: wk.i32):
        for i in range(a.shape[0] * a.shape[1]):
            out[i, 0] = i // a.shape[1]
            out[i, 1] = i % a.shape[1]
            out[i, 2] = (i - 7) // d              # may be negative: the floor helper
            out[i, 3] = i % wk.max(d, 0)

    split(a, out, d)
    i = np.arange(15)
    floor = (i - 7) // d if d else np.zeros(15, int)
    modulo = i % d if d > 0 else np.zeros(15, int)
    np.testing.assert_array_equal(out.to_numpy(), np.stack([i // 5, i % 5, floor, modulo], axis=1))
    if hasattr(program_module.current().backend, "features"):
        wgsl = split.source()
        assert "fn wk_mod_i32" not in wgsl and "fn wk_floordiv_i32" in wgsl
