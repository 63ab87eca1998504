"""wk.simt's wave operations through the AMDGPU compile path (amdgpu_simt.py): kernels using every warp,
subgroup, sized (`*_tiled`) and voting-barrier operation built for gfx90a (wave64) and gfx1100 (wave32) to linked,
checked code objects, and the instructions their assembly uses. Nothing runs on AMD hardware here; the values
the lowering computes are checked lane by lane in test_amdgpu_simt_lanes.py."""
from __future__ import annotations

import re

import wgkern as wk
from wgkern.backends.llvm.amdgpu_codegen import emit_amdgpu_module
from wgkern.backends.llvm.amdgpu_object import compile_assembly
from wgkern.backends.llvm.amdgpu_target import amdgpu_target

from ._reduction_kernel import register_reductions
from .test_amdgpu import build_all, layout_of, needs_linker, offloaded  # noqa: F401 - offloaded is a fixture

FULL = 0xFFFFFFFF


def assembly(kernel, processor: str, fast_math: bool = False) -> str:
    """The kernel's optimised AMDGPU assembly for one processor."""
    return compile_assembly(emit_amdgpu_module(kernel, layout_of(kernel), amdgpu_target(processor), "t",
                                               (0, 0), fast_math=fast_math)[0], processor)


def warp_kernel(offloaded):
    n = 64
    x = wk.field(wk.i32, shape=n)
    y = wk.field(wk.f32, shape=n)

    @wk.kernel
    def warps():
        for i in range(n):
            v, f = x[i], y[i]
            total = wk.simt.warp.shfl_sync_i32(wk.u32(FULL), v, 3) + wk.simt.warp.shfl_up_i32(wk.u32(FULL), v, 1) \
                + wk.simt.warp.shfl_down_i32(wk.u32(FULL), v, 1) + wk.simt.warp.shfl_xor_i32(wk.u32(FULL), v, 1) \
                + wk.simt.warp.ballot(v > 0) + wk.simt.warp.all_nonzero(wk.u32(FULL), v) \
                + wk.simt.warp.any_nonzero(wk.u32(FULL), v) + wk.simt.warp.unique(wk.u32(FULL), v) \
                + wk.simt.warp.match_any(wk.u32(FULL), v) + wk.simt.warp.match_all(wk.u32(FULL), v) \
                + wk.simt.warp.active_mask()
            wk.simt.warp.sync(wk.u32(FULL))
            y[i] = wk.simt.warp.shfl_sync_f32(wk.u32(FULL), f, 0) + wk.simt.warp.shfl_up_f32(wk.u32(FULL), f, 1) \
                + wk.simt.warp.shfl_down_f32(wk.u32(FULL), f, 1)
            x[i] = total

    return offloaded(warps)


def subgroup_kernel(offloaded):
    n = 64
    x = wk.field(wk.i32, shape=n)
    y = wk.field(wk.f32, shape=n)
    masks = wk.field(wk.u64, shape=n)

    @wk.kernel
    def subgroups():
        for i in range(n):
            v, f = x[i], y[i]
            total = 0
            for op in wk.static([wk.simt.subgroup.reduce_add, wk.simt.subgroup.inclusive_mul,
                                 wk.simt.subgroup.exclusive_min, wk.simt.subgroup.reduce_max,
                                 wk.simt.subgroup.inclusive_and, wk.simt.subgroup.exclusive_or,
                                 wk.simt.subgroup.reduce_xor]):
                total += op(v)
            total += wk.simt.subgroup.shuffle(v, 5) + wk.simt.subgroup.shuffle_up(v, 1) \
                + wk.simt.subgroup.shuffle_down(v, 1) + wk.simt.subgroup.shuffle_xor(v, wk.u32(3))
            g = wk.simt.subgroup.reduce_min(f) + wk.simt.subgroup.exclusive_add(f) + wk.simt.subgroup.broadcast(f, 1)
            total += wk.simt.subgroup.elect() + wk.simt.subgroup.all_true(v) + wk.simt.subgroup.any_true(v) \
                + wk.simt.subgroup.all_equal(v) + wk.simt.subgroup.broadcast_first(v) \
                + wk.simt.subgroup.group_size() + wk.simt.subgroup.invocation_id()
            total += wk.simt.subgroup.reduce_all_add_tiled(v, 5) + wk.simt.subgroup.exclusive_max_tiled(v, 3) \
                + wk.simt.subgroup.segmented_reduce_min_tiled(v, v & 1, 5) + wk.simt.subgroup.all_true_tiled(v, 2)
            masks[i] = wk.simt.subgroup.ballot(v > 0)
            wk.simt.subgroup.barrier()
            wk.simt.subgroup.mem_fence()
            x[i] = total
            y[i] = g

    return offloaded(subgroups)


def voting_kernel(offloaded):
    n = 256
    x = wk.field(wk.i32, shape=n)

    @wk.kernel
    def votes():
        wk.loop_config(block_dim=128)
        for i in range(n):
            v = x[i]
            x[i] = wk.simt.block.sync_count_nonzero(v % 3) * 4 + wk.simt.block.sync_all_nonzero(v) * 2 \
                + wk.simt.block.sync_any_nonzero(v)

    return offloaded(votes)


@needs_linker
def test_warp_operations_become_checked_code_objects(offloaded):
    kernel = warp_kernel(offloaded)
    gfx90a, gfx1100 = build_all(kernel)
    assert gfx90a.reports[0].lds_bytes == gfx1100.reports[0].lds_bytes == 0
    wave64, wave32 = assembly(kernel, "gfx90a"), assembly(kernel, "gfx1100")
    for code in (wave64, wave32):
        assert "ds_bpermute_b32" in code and "v_mbcnt_lo_u32_b32" in code
    assert "v_mbcnt_hi_u32_b32" in wave64 and "v_mbcnt_hi_u32_b32" not in wave32
    text = emit_amdgpu_module(kernel, layout_of(kernel), amdgpu_target("gfx90a"), "t", (0, 0))[0]
    assert "@llvm.amdgcn.ballot.i64" in text and "@llvm.amdgcn.wave.barrier()" in text and "nvvm" not in text
    # the warp is half the wave64: its 32-bit masks are the ballot shifted by the half's first lane
    assert "lshr i64" in text
    text32 = emit_amdgpu_module(kernel, layout_of(kernel), amdgpu_target("gfx1100"), "t", (0, 0))[0]
    assert "@llvm.amdgcn.ballot.i32" in text32 and "@llvm.amdgcn.ballot.i64" not in text32


@needs_linker
def test_subgroup_and_sized_operations_become_checked_code_objects(offloaded):
    kernel = subgroup_kernel(offloaded)
    build_all(kernel)
    wave64, wave32 = assembly(kernel, "gfx90a"), assembly(kernel, "gfx1100")
    for code in (wave64, wave32):
        assert "ds_bpermute_b32" in code and "v_mbcnt_lo_u32_b32" in code
    # ballots are scalar compares writing a wave-wide mask: s[n:n+1] pairs on wave64, one SGPR on wave32
    assert "v_cmp_gt_i32_e64 s[" in wave64 or "v_cmp_lt_i32_e64 s[" in wave64
    text64 = emit_amdgpu_module(kernel, layout_of(kernel), amdgpu_target("gfx90a"), "t", (0, 0))[0]
    text32 = emit_amdgpu_module(kernel, layout_of(kernel), amdgpu_target("gfx1100"), "t", (0, 0))[0]
    assert "@llvm.cttz.i64" in text64 and "@llvm.cttz.i32" in text32
    # scans take log2(wave) shuffle-up steps: the last one reads 32 lanes below on wave64, 16 on wave32
    assert "icmp uge i32 %t" in text64


@needs_linker
def test_voting_block_barriers_count_in_lds(offloaded):
    kernel = voting_kernel(offloaded)
    for code in build_all(kernel):
        assert code.reports[0].lds_bytes == 4                 # the one vote word
    for processor in ("gfx90a", "gfx1100"):
        code = assembly(kernel, processor)
        assert code.count("s_barrier") == 9 and code.count("ds_add_u32") == 3      # 3 barriers per vote
        assert code.count("ds_read_b32" if processor == "gfx90a" else "ds_load_b32") == 3


def test_group_size_is_the_wave(offloaded):
    out = wk.field(wk.i32, shape=64)

    @wk.kernel
    def size():
        for i in range(64):
            out[i] = wk.simt.subgroup.group_size()

    kernel = offloaded(size)
    for processor, lanes in (("gfx90a", 64), ("gfx1100", 32)):
        text = emit_amdgpu_module(kernel, layout_of(kernel), amdgpu_target(processor), "t", (0, 0))[0]
        assert f"store i32 {lanes}," in text


@needs_linker
def test_register_reductions_combine_across_the_wave_before_one_atomic(offloaded):
    """Each register reduction (gpu_codegen.flush_chunk_reductions) takes log2(wave) ds_bpermute steps (two per
    step at 64 bits) and then one atomic, in the wave's first lane: the processor's instruction where it has one
    (f32 add and i32 max on both, f64 add on gfx90a), a compare-and-swap loop elsewhere (f64 add on gfx1100, and
    f32 add on gfx90a without fast_math: its instruction flushes subnormals)."""
    kernel = offloaded(register_reductions())
    build_all(kernel)
    for processor, fast_math, steps, instructions in (
            ("gfx90a", True, 6, ["add_f32", "smax", "add_f64"]),
            ("gfx90a", False, 6, ["cmpswap", "smax", "add_f64"]),
            ("gfx1100", False, 5, ["add_f32", "max_i32", "cmpswap_b64"])):
        code = assembly(kernel, processor, fast_math)
        permutes = [m.start() for m in re.finditer(r"ds_bpermute_b32", code)]
        atomics = [m.start() for m in re.finditer(r"^\s+global_atomic_\w+", code, re.M)]
        assert len(permutes) == steps * (1 + 1 + 2)                 # f32, i32, and f64 as two 32-bit halves
        # flushed in turn, each atomic after its own register's steps
        assert re.findall(r"^\s+global_atomic_(\w+)", code, re.M) == instructions
        before = [sum(p < at for p in permutes) for at in atomics]
        assert all(found >= wanted for found, wanted in zip(before, (steps, 2 * steps, 4 * steps))), before
    text = emit_amdgpu_module(kernel, layout_of(kernel), amdgpu_target("gfx90a"), "t", (0, 0))[0]
    assert text.count("atomicrmw") + text.count("cmpxchg") == 3 and "wave.first" in text
