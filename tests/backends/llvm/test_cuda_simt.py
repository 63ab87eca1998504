"""wk.simt through the CUDA backend's compile path without a GPU (cuda_simt.py): shared arrays, block barriers
and votes, warp and subgroup intrinsics to PTX (checked by ptxas where a CUDA toolkit is installed), the
block-strided range loop and the launch's block size. Running them is tests/lang/test_simt.py under
WK_ARCH=cuda on a machine with an NVIDIA GPU."""
from __future__ import annotations

import re

import pytest

import wgkern as wk
from wgkern.backends.llvm import cuda
from wgkern.ir import nodes as ir
from wgkern.backends.llvm.cuda_codegen import THREADS_PER_BLOCK, block_size
from wgkern.runtime import program as program_module

from .test_cuda import to_ptx

VEC3 = wk.types.vector(3, wk.i32)


@pytest.fixture
def offloaded(monkeypatch):
    """Compile kernels on a CPU program up to the backend, and hand back the OffloadedKernel the CPU backend
    would refuse (it has no wk.simt)."""
    wk.init(arch=wk.cpu)
    captured = []

    class Captured(Exception):
        pass

    def capture(kernel, origin=None):
        captured.append(kernel)
        raise Captured

    monkeypatch.setattr(program_module.get_program().backend, "compile", capture)

    def compile_kernel(kernel, *args):
        with pytest.raises(Captured):
            kernel(*args)
        return captured[-1]
    yield compile_kernel
    wk.reset()


def test_block_features_become_ptx(offloaded):
    n = 100
    a = wk.field(wk.f32, shape=n)
    out = wk.field(wk.i32, shape=n)

    @wk.kernel
    def block_kernel():
        wk.loop_config(block_dim=64)
        for i in range(n):
            t = wk.simt.block.thread_idx()
            scalars = wk.simt.block.SharedArray((64,), wk.f32)
            vectors = wk.simt.block.SharedArray((8, 8), VEC3)
            scalars[t] = a[i]
            wk.atomic_add(scalars[0], 1.0)
            vectors[t // 8, t % 8] = wk.Vector([t, t + 1, t + 2])
            wk.simt.block.sync()
            wk.simt.block.mem_sync()
            wk.simt.grid.memfence()
            out[i] = wk.cast(scalars[63 - t], wk.i32) + vectors[t // 8, 0][1] + wk.simt.block.global_thread_idx() \
                + wk.simt.block.sync_count_nonzero(t % 2) + wk.simt.block.sync_all_nonzero(t) \
                + wk.simt.block.sync_any_nonzero(t)

    kernel = offloaded(block_kernel)
    code = to_ptx(kernel)
    from wgkern.backends.llvm.cuda_codegen import emit_cuda_module
    from wgkern.backends.llvm.layout import build_layout
    from wgkern.backends.llvm.target import CUDA_TARGET
    _, _, sites = emit_cuda_module(kernel, build_layout(kernel, (1 << 40, (1 << 40) + 64)), CUDA_TARGET, "t",
                                   (0, 0), True)
    shared_site = next(site for site in sites if site.container.kind == "shared")    # debug=True checks them too
    to_ptx(kernel, debug=True)
    from wgkern.backends.llvm.cpu import debug_check_error
    error = debug_check_error(kernel, shared_site, None)        # the message a failed check raises
    assert isinstance(error, wk.BoundsCheckError)
    assert re.search(r"index out of range for SharedArray\d@\d+ of shape \((64,|8, 8, 3)\)", str(error))
    assert re.search(r"\.shared \.align 16 \.b8 wk_shared0\[256\]", code)       # 64 f32
    assert re.search(r"\.shared \.align 16 \.b8 wk_shared1\[768\]", code)       # 8 x 8 x 3 i32
    assert "bar.sync" in code and "bar.red.popc.u32" in code and "bar.red.and.pred" in code
    assert "bar.red.or.pred" in code and "membar.cta" in code and "membar.gl" in code
    assert block_size(kernel.tasks[0]) == 64


def test_warp_and_subgroup_intrinsics_become_ptx(offloaded):
    n = 64
    x = wk.field(wk.i32, shape=n)
    y = wk.field(wk.f32, shape=n)
    full = 0xFFFFFFFF

    @wk.kernel
    def warp_kernel():
        for i in range(n):
            v, f = x[i], y[i]
            total = wk.simt.warp.shfl_sync_i32(wk.u32(full), v, 3) + wk.simt.warp.shfl_up_i32(wk.u32(full), v, 1) \
                + wk.simt.warp.shfl_down_i32(wk.u32(full), v, 1) + wk.simt.warp.shfl_xor_i32(wk.u32(full), v, 1) \
                + wk.simt.warp.ballot(v > 0) + wk.simt.warp.all_nonzero(wk.u32(full), v) \
                + wk.simt.warp.any_nonzero(wk.u32(full), v) + wk.simt.warp.unique(wk.u32(full), v) \
                + wk.simt.warp.match_any(wk.u32(full), v) + wk.simt.warp.match_all(wk.u32(full), v) \
                + wk.simt.warp.active_mask()
            wk.simt.warp.sync(wk.u32(full))
            g = wk.simt.warp.shfl_sync_f32(wk.u32(full), f, 0) + wk.simt.warp.shfl_up_f32(wk.u32(full), f, 1) \
                + wk.simt.warp.shfl_down_f32(wk.u32(full), f, 1)
            for op in wk.static([wk.simt.subgroup.reduce_add, wk.simt.subgroup.inclusive_mul,
                                 wk.simt.subgroup.exclusive_min, wk.simt.subgroup.reduce_max,
                                 wk.simt.subgroup.inclusive_and, wk.simt.subgroup.exclusive_or,
                                 wk.simt.subgroup.reduce_xor, wk.simt.subgroup.shuffle_down]):
                total += op(v) if wk.static(op is not wk.simt.subgroup.shuffle_down) else op(v, 1)
            g += wk.simt.subgroup.reduce_min(f) + wk.simt.subgroup.exclusive_add(f) + wk.simt.subgroup.broadcast(f, 1)
            total += wk.simt.subgroup.elect() + wk.simt.subgroup.all_true(v) + wk.simt.subgroup.any_true(v) \
                + wk.simt.subgroup.all_equal(v) + wk.simt.subgroup.broadcast_first(v) \
                + wk.simt.subgroup.group_size() + wk.simt.subgroup.invocation_id()
            wk.simt.subgroup.barrier()
            wk.simt.subgroup.sync()
            wk.simt.subgroup.mem_fence()
            x[i] = total
            y[i] = g

    kernel = offloaded(warp_kernel)
    code = to_ptx(kernel)
    for instruction in ("shfl.sync.idx.b32", "shfl.sync.up.b32", "shfl.sync.down.b32", "shfl.sync.bfly.b32",
                        "vote.sync.ballot.b32", "vote.sync.all.pred", "vote.sync.any.pred", "vote.sync.uni.pred",
                        "match.any.sync.b32", "match.all.sync.b32", "activemask.b32", "bar.warp.sync",
                        "%laneid"):
        assert instruction in code, instruction
    assert block_size(kernel.tasks[0]) == THREADS_PER_BLOCK


def test_simt_tasks_stride_over_whole_blocks_and_launch_block_dim_threads(offloaded):
    n = 1000
    out = wk.field(wk.i32, shape=n)

    @wk.kernel
    def strided():
        wk.loop_config(block_dim=96)
        for i in range(n):
            out[i] = wk.simt.block.thread_idx()
        wk.loop_config(block_dim=96)       # no simt: the block size still applies, the loop strides per thread
        for i in range(n):
            out[i] += 1

    kernel = offloaded(strided)
    from wgkern.backends.llvm.cuda_codegen import emit_cuda_module
    from wgkern.backends.llvm.layout import build_layout
    from wgkern.backends.llvm.target import CUDA_TARGET
    text, _, _ = emit_cuda_module(kernel, build_layout(kernel), CUDA_TARGET, "t", (0, 0))
    first, second = text.split("define void")[1:3]
    assert "task.block" in first and "zext i32 %block_base to i64" in first
    assert "task.block" not in second and "zext i32 %gid to i64" in second
    slots = kernel.containers
    shapes = [tuple(s.shape) for s in slots]
    for task in kernel.tasks:
        launch = cuda.TaskLaunch(None, task, slots, 10 ** 6, 10)
        assert launch.threads == 96 and launch.blocks([], shapes) == -(-n // 96)


def test_fences_and_thread_ids_in_serial_code_become_ptx(offloaded):
    out = wk.field(wk.i32, shape=4)

    @wk.kernel
    def serial():
        out[0] = wk.global_thread_idx()
        wk.simt.block.mem_fence()
        wk.simt.grid.mem_fence()
        for i in range(4):
            out[i] += wk.global_thread_idx()

    kernel = offloaded(serial)
    assert [task.kind for task in kernel.tasks] == ["serial", "range"]
    code = to_ptx(kernel)
    assert "membar.cta" in code and "membar.gl" in code


def test_shared_arrays_past_cuda_static_shared_memory_are_an_error(offloaded):
    out = wk.field(wk.f32, shape=64)

    @wk.kernel
    def big():
        for i in range(64):
            first = wk.simt.block.SharedArray(8192, wk.f32)
            second = wk.simt.block.SharedArray((64, 65), wk.f32)
            first[i] = 1.0
            second[i, 0] = 1.0
            out[i] = first[i] + second[i, 0]

    kernel = offloaded(big)
    with pytest.raises(wk.CompileError, match=r"take 49408 bytes, more than CUDA.s 49152 bytes of static shared memory"):
        to_ptx(kernel)


def test_block_dim_past_cuda_limit_is_an_error(offloaded):
    out = wk.field(wk.i32, shape=8)

    @wk.kernel
    def wide():
        wk.loop_config(block_dim=2048)
        for i in range(8):
            out[i] = wk.simt.block.thread_idx()

    kernel = offloaded(wide)
    with pytest.raises(wk.CompileError, match=r"block_dim=2048 is more than CUDA's 1024 threads per block") as info:
        to_ptx(kernel)
    assert "wk.loop_config(block_dim=2048)" in str(info.value) or "for i in range(8)" in str(info.value)


def test_quadrants_ballot_and_tiled_subgroup_ops_become_ptx(offloaded):
    """subgroup.ballot is the warp's vote.ballot over its live lanes widened to u64; the *_tiled and segmented
    forms are shuffles (run on a GPU by tests/lang/test_simt_tiled.py under WK_ARCH=cuda). Their mask is a ballot
    over the lanes the block launched (which waits for all of them), never `activemask`, which after divergent
    code may name only the lanes that got there first."""
    n = 64
    x = wk.field(wk.i32, shape=n)
    masks = wk.field(wk.u64, shape=n)

    @wk.kernel
    def tiled_kernel():
        for i in range(n):
            v = x[i]
            masks[i] = wk.simt.subgroup.ballot(v > 0)
            x[i] = wk.simt.subgroup.reduce_all_add_tiled(v, 5) + wk.simt.subgroup.exclusive_max_tiled(v, 3) \
                + wk.simt.subgroup.segmented_reduce_min_tiled(v, v & 1, 5) + wk.simt.subgroup.all_true_tiled(v, 2)

    code = to_ptx(offloaded(tiled_kernel))
    for instruction in ("vote.sync.ballot.b32", "shfl.sync.bfly.b32", "shfl.sync.up.b32", "cvt.u64.u32"):
        assert instruction in code, instruction
    assert "activemask" not in code


def test_a_tiles_subgroup_check_is_settled_at_compile_time(offloaded):
    """A register tile's check (ir.TILE_SUBGROUP_CHECK, put before each Tile.zeros() / eye()) emits nothing on
    CUDA: the warp's 32 lanes hold a Tile16x16's or Tile32x32's rows. (Tiles are refused on the CPU program this
    fixture compiles on, so the check is put into a subgroup kernel's task by hand.) A tile wider than the warp
    would be a CompileError at its line."""
    n = 32
    x = wk.field(wk.f32, shape=n)

    @wk.kernel
    def rows():
        wk.loop_config(block_dim=n)
        for i in range(n):
            x[i] = wk.simt.subgroup.shuffle(x[i], 0)

    kernel = offloaded(rows)
    body = kernel.tasks[0].body.stmts
    plain = to_ptx(kernel)
    for size in (16, 32):
        size_const = ir.Const(value=size, dtype=wk.i32)
        body[:0] = [size_const, ir.SimtOp(op=ir.TILE_SUBGROUP_CHECK, args=[size_const])]
        assert to_ptx(kernel) == plain
        del body[:2]
    wide = ir.Const(value=64, dtype=wk.i32)
    body[:0] = [wide, ir.SimtOp(op=ir.TILE_SUBGROUP_CHECK, args=[wide], loc=kernel.tasks[0].loc)]
    with pytest.raises(wk.CompileError, match="wk.simt.Tile64x64 needs a subgroup of 64 invocations; this target's "
                                              "has 32"):
        to_ptx(kernel)
