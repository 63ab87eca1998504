"""wk.simt on the arches that have it (conftest.py's `gpu` fixture: Vulkan through lavapipe here, CUDA under
WK_ARCH=cuda): shared arrays and block barriers against numpy, thread indices for several block_dims, each
subgroup operation against a numpy model built from the reported group_size(), the voting barriers; and the
errors (CPU refusal, block_dim, shapes, autodiff, serial code)."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk
from wgkern.lang.simt import SIMT_CALLS


def test_simt_resolves_like_taichi():
    assert wk.simt.block.SharedArray is not None
    assert callable(wk.simt.block.sync) and callable(wk.simt.warp.shfl_down_i32)
    assert callable(wk.simt.subgroup.exclusive_xor) and callable(wk.simt.grid.memfence)
    assert len(SIMT_CALLS) == 93 and wk.global_thread_idx in SIMT_CALLS
    with pytest.raises(wk.WkError, match="inside a @wk.kernel"):
        wk.simt.block.sync()


def test_tiled_matmul_with_shared_memory(gpu):
    n, tile = 32, 8
    tiles = n // tile
    a = wk.field(wk.f32, shape=(n, n))
    b = wk.field(wk.f32, shape=(n, n))
    c = wk.field(wk.f32, shape=(n, n))

    @wk.kernel
    def matmul():
        wk.loop_config(block_dim=tile * tile)
        for index in range(n * n):
            block, t = index // (tile * tile), wk.simt.block.thread_idx()
            r, col = t // tile, t % tile
            i, j = (block // tiles) * tile + r, (block % tiles) * tile + col
            sa = wk.simt.block.SharedArray((tile, tile), wk.f32)
            sb = wk.simt.block.SharedArray((tile, tile), wk.f32)
            acc = 0.0
            for k in range(tiles):
                sa[r, col] = a[i, k * tile + col]
                sb[r, col] = b[k * tile + r, j]
                wk.simt.block.sync()
                for kk in range(tile):
                    acc += sa[r, kk] * sb[kk, col]
                wk.simt.block.sync()
            c[i, j] = acc

    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)
    a.from_numpy(x)
    b.from_numpy(y)
    matmul()
    np.testing.assert_allclose(c.to_numpy(), x @ y, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("block", [64, 128])
def test_block_sum_through_shared_memory(gpu, block):
    blocks = 5
    x = wk.field(wk.f32, shape=block * blocks)
    sums = wk.field(wk.f32, shape=blocks)

    @wk.kernel
    def block_sum():
        wk.loop_config(block_dim=block)
        for i in range(block * blocks):
            t = wk.simt.block.thread_idx()
            shared = wk.simt.block.SharedArray(block, wk.f32)
            shared[t] = x[i]
            wk.simt.block.sync()
            stride = block // 2
            while stride > 0:
                if t < stride:
                    shared[t] += shared[t + stride]
                wk.simt.block.sync()
                stride //= 2
            if t == 0:
                sums[i // block] = shared[0]

    values = np.random.default_rng(2).standard_normal(block * blocks).astype(np.float32)
    x.from_numpy(values)
    block_sum()
    np.testing.assert_allclose(sums.to_numpy(), values.reshape(blocks, block).sum(axis=1), rtol=1e-4, atol=1e-4)


def test_inclusive_prefix_scan_per_block(gpu):
    block, blocks = 32, 4
    x = wk.field(wk.i32, shape=block * blocks)
    out = wk.field(wk.i32, shape=block * blocks)

    @wk.kernel
    def scan():
        wk.block_dim(block)         # Taichi's older spelling of loop_config(block_dim=...)
        for i in range(block * blocks):
            t = wk.simt.block.thread_idx()
            shared = wk.simt.block.SharedArray((block,), wk.i32)
            shared[t] = x[i]
            wk.simt.block.sync()
            d = 1
            while d < block:
                v = shared[t]
                if t >= d:
                    v += shared[t - d]
                wk.simt.block.sync()
                shared[t] = v
                wk.simt.block.sync()
                d *= 2
            out[i] = shared[t]

    values = np.random.default_rng(3).integers(-50, 50, block * blocks).astype(np.int32)
    x.from_numpy(values)
    scan()
    np.testing.assert_array_equal(out.to_numpy(), np.cumsum(values.reshape(blocks, block), axis=1).reshape(-1))


@pytest.mark.parametrize("block_dim", [None, 1, 7, 32, 100, 256])
def test_thread_indices_follow_the_range_split(gpu, block_dim):
    begin, count = 3, 613              # not a multiple of any block_dim above but 1
    thread = wk.field(wk.i32, shape=count)
    global_thread = wk.field(wk.i32, shape=count)

    @wk.kernel
    def indices():
        wk.loop_config(block_dim=block_dim)
        for i in range(begin, begin + count):
            thread[i - begin] = wk.simt.block.thread_idx()
            global_thread[i - begin] = wk.simt.block.global_thread_idx()

    indices()
    size = block_dim or 256          # the default block of both GPU backends
    expected = np.arange(count)
    np.testing.assert_array_equal(thread.to_numpy(), expected % size)
    np.testing.assert_array_equal(global_thread.to_numpy(), expected)


def test_global_thread_idx_on_every_arch(arch):
    """Taichi's top-level ti.global_thread_idx(): the thread's global id on GPUs, the worker's number on the CPU
    (0 for a launch this small, which runs on the calling thread), 0 in serial code."""
    n = 300
    ids = wk.field(wk.i32, shape=n + 1)

    @wk.kernel
    def record():
        wk.loop_config(block_dim=64)
        for i in range(n):
            ids[i] = wk.global_thread_idx()
        ids[n] = wk.global_thread_idx() + 7

    record()
    got = ids.to_numpy()
    np.testing.assert_array_equal(got[:n], np.zeros(n) if arch == wk.cpu else np.arange(n))
    assert got[n] == 7


def test_fences_wait_for_no_one(gpu):
    """block.mem_fence() (and mem_sync) may sit in divergent code, and fences may sit in serial code (Quadrants)."""
    n = 32
    out = wk.field(wk.i32, shape=n + 1)

    @wk.kernel
    def fenced():
        wk.loop_config(block_dim=n)
        for i in range(n):
            t = wk.simt.block.thread_idx()
            if t == 0:
                wk.simt.block.mem_fence()
            if t == 5:
                wk.simt.block.mem_sync()
            out[i] = t
        out[n] = 11
        wk.simt.grid.memfence()
        wk.simt.grid.mem_fence()
        wk.simt.block.mem_fence()

    fenced()
    np.testing.assert_array_equal(out.to_numpy(), np.append(np.arange(n), 11))


def test_shared_arrays_are_not_forwarded_across_barriers(gpu):
    n = 64
    out = wk.field(wk.i32, shape=n)

    @wk.kernel
    def across():
        wk.loop_config(block_dim=n)
        for i in range(n):
            t = wk.simt.block.thread_idx()
            cell = wk.simt.block.SharedArray(1, wk.i32)
            if t == 0:
                cell[0] = 1
            wk.simt.block.sync()
            first = cell[0]
            wk.simt.block.sync()
            if t == 1:
                cell[0] = 2
            wk.simt.block.sync()
            out[i] = first * 10 + cell[0]      # thread 0 must read cell[0] again, not its own 1

    across()
    np.testing.assert_array_equal(out.to_numpy(), np.full(n, 12))


def test_sync_nonzero_votes(gpu):
    block, blocks = 32, 3
    counts = wk.field(wk.i32, shape=(block * blocks, 3))

    @wk.kernel
    def votes():
        wk.loop_config(block_dim=block)
        for i in range(block * blocks):
            t = wk.simt.block.thread_idx()
            b = i // block
            counts[i, 0] = wk.simt.block.sync_count_nonzero(t % (b + 2) == 0)
            counts[i, 1] = wk.simt.block.sync_all_nonzero(t < block - b)       # all only in block 0
            counts[i, 2] = wk.simt.block.sync_any_nonzero(t == 40 - b * 5)    # t == 35 is out: block 1 has none

    votes()
    got = counts.to_numpy().reshape(blocks, block, 3)
    for b in range(blocks):
        assert (got[b, :, 0] == sum(1 for t in range(block) if t % (b + 2) == 0)).all()
        assert (got[b, :, 1] == (1 if b == 0 else 0)).all()
        assert (got[b, :, 2] == (1 if 40 - b * 5 < block else 0)).all()


def test_vector_typed_2d_shared_array_and_shared_atomics(gpu):
    block, blocks = 64, 2
    vec3 = wk.types.vector(3, wk.f32)
    x = wk.field(wk.i32, shape=block * blocks)
    rows = wk.field(wk.f32, shape=(block * blocks, 3))
    hist = wk.field(wk.i32, shape=(blocks, 8))

    @wk.kernel
    def shared_kinds():
        wk.loop_config(block_dim=block)
        for i in range(block * blocks):
            t = wk.simt.block.thread_idx()
            grid = wk.simt.block.SharedArray((8, 8), vec3)
            counts = wk.simt.block.SharedArray(8, wk.i32)
            if t < 8:
                counts[t] = 0
            grid[t // 8, t % 8] = wk.Vector([t, 2.0 * t, x[i]])
            wk.simt.block.sync()
            wk.atomic_add(counts[x[i] % 8], 1)
            mirrored = grid[7 - t // 8, 7 - t % 8]
            rows[i, 0], rows[i, 1], rows[i, 2] = mirrored[0], mirrored[1], grid[t // 8, t % 8].z
            wk.simt.block.sync()
            if t < 8:
                hist[i // block, t] = counts[t]

    values = np.random.default_rng(4).integers(0, 100, block * blocks).astype(np.int32)
    x.from_numpy(values)
    shared_kinds()
    t = np.arange(block * blocks) % block
    got = rows.to_numpy()
    np.testing.assert_array_equal(got[:, 0], 63 - t)
    np.testing.assert_array_equal(got[:, 1], 2.0 * (63 - t))
    np.testing.assert_array_equal(got[:, 2], values)
    expected = np.stack([np.bincount(values.reshape(blocks, block)[b] % 8, minlength=8) for b in range(blocks)])
    np.testing.assert_array_equal(hist.to_numpy(), expected)


# ---- subgroups ------------------------------------------------------------------------------------------------

def _needs_subgroups(arch):
    from wgkern.runtime import program as program_module
    backend = program_module.get_program().backend
    if getattr(backend, "features", None) is not None and "subgroup" not in backend.features:
        pytest.skip("the adapter has no 'subgroup' feature")


def _group_size() -> int:
    size = wk.field(wk.i32, shape=1)

    @wk.kernel
    def probe():
        for i in range(1):
            size[0] = wk.simt.subgroup.group_size()

    probe()
    return int(size.to_numpy()[0])


_INT_OPS = ["add", "mul", "min", "max", "and", "or", "xor"]
_NUMPY = {"add": np.add, "mul": np.multiply, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and,
          "or": np.bitwise_or, "xor": np.bitwise_xor}
_IDENTITY = {"add": 0, "mul": 1, "min": np.iinfo(np.int32).max, "max": np.iinfo(np.int32).min, "and": -1, "or": 0,
             "xor": 0}


def _subgroup_model(kind: str, op: str, values: np.ndarray, size: int) -> np.ndarray:
    groups = values.reshape(-1, size)
    ufunc = _NUMPY[op]
    if kind == "reduce":
        return np.repeat(ufunc.reduce(groups, axis=1), size).astype(values.dtype)
    inclusive = ufunc.accumulate(groups, axis=1)
    if kind == "inclusive":
        return inclusive.reshape(-1).astype(values.dtype)
    exclusive = np.concatenate([np.full((groups.shape[0], 1), _IDENTITY[op], values.dtype), inclusive[:, :-1]],
                               axis=1)
    return exclusive.reshape(-1).astype(values.dtype)


@pytest.mark.parametrize("kind", ["reduce", "inclusive", "exclusive"])
def test_subgroup_integer_reductions_and_scans(gpu, kind):
    _needs_subgroups(gpu)
    size = _group_size()
    n = 128
    x = wk.field(wk.i32, shape=n)
    out = wk.field(wk.i32, shape=(len(_INT_OPS), n))
    ops = {op: getattr(wk.simt.subgroup, f"{kind}_{op}") for op in _INT_OPS}

    @wk.kernel
    def run():
        wk.loop_config(block_dim=64)
        for i in range(n):
            v = x[i]
            for k in wk.static(range(len(_INT_OPS))):
                value = v if wk.static(_INT_OPS[k] != "mul") else 1 - 2 * (v & 1)   # +-1: no overflow
                out[k, i] = ops[_INT_OPS[k]](value)

    values = np.random.default_rng(5).integers(-1000, 1000, n).astype(np.int32)
    x.from_numpy(values)
    run()
    got = out.to_numpy()
    for k, op in enumerate(_INT_OPS):
        operand = values if op != "mul" else (1 - 2 * (values & 1)).astype(np.int32)
        np.testing.assert_array_equal(got[k], _subgroup_model(kind, op, operand, size), err_msg=f"{kind}_{op}")


@pytest.mark.parametrize("dtype", [wk.i32, wk.f32])
def test_sized_subgroup_reductions_scans_and_votes_over_groups_of_consecutive_invocations(gpu, dtype):
    _needs_subgroups(gpu)
    log2_max = min(3, _group_size().bit_length() - 1)
    n = 64
    x = wk.field(dtype, shape=n)
    out = wk.field(dtype, shape=(log2_max + 1, 6, n))
    sub = wk.simt.subgroup

    @wk.kernel
    def run():
        wk.loop_config(block_dim=n)
        for i in range(n):
            v = x[i]
            for s in wk.static(range(log2_max + 1)):
                out[s, 0, i] = sub.reduce_add(v, s)
                out[s, 1, i] = sub.reduce_min(v, log2_size=s)
                out[s, 2, i] = sub.reduce_max(v, s)
                out[s, 3, i] = sub.reduce_all_add(v, s)
                out[s, 4, i] = sub.reduce_all_min(v, s)
                out[s, 5, i] = sub.reduce_all_max(value=v, log2_size=s)

    values = np.random.default_rng(7).integers(-64, 64, n).astype(dtype.np_dtype)
    x.from_numpy(values)
    run()
    got = out.to_numpy()
    for s in range(log2_max + 1):
        groups = values.reshape(-1, 1 << s)
        for k, reduce in enumerate([np.sum, np.min, np.max]):
            whole = reduce(groups, axis=1)
            np.testing.assert_array_equal(got[s, k].reshape(-1, 1 << s)[:, 0], whole, err_msg=f"{s} {k}")
            np.testing.assert_array_equal(got[s, 3 + k], np.repeat(whole, 1 << s), err_msg=f"{s} all {k}")

    scans = wk.field(dtype, shape=(log2_max + 1, 8, n))
    votes = wk.field(wk.i32, shape=(log2_max + 1, 3, n))
    flags = wk.field(dtype, shape=n)

    @wk.kernel
    def scan_and_vote():
        wk.loop_config(block_dim=n)
        for i in range(n):
            v = x[i]
            for s in wk.static(range(log2_max + 1)):
                scans[s, 0, i] = sub.inclusive_add(v, s)
                scans[s, 1, i] = sub.inclusive_min(v, s)
                scans[s, 2, i] = sub.inclusive_max(v, s)
                scans[s, 3, i] = sub.exclusive_add(v, s)
                scans[s, 4, i] = sub.exclusive_mul(v, s)
                scans[s, 5, i] = sub.exclusive_min(v, s, 1000)
                scans[s, 6, i] = sub.exclusive_max(v, log2_size=s, identity=-1000)
                scans[s, 7, i] = sub.inclusive_mul(v, s)
                votes[s, 0, i] = sub.all_true(flags[i], s)
                votes[s, 1, i] = sub.any_true(flags[i], s)
                votes[s, 2, i] = sub.all_equal(flags[i], s)

    x.from_numpy((np.arange(n) * 7 % 11 - 5).astype(dtype.np_dtype))     # -5..5: exact products
    flags.from_numpy((np.arange(n) % 7 != 3).astype(dtype.np_dtype))
    values, flag_values = x.to_numpy(), flags.to_numpy()
    scan_and_vote()
    got, voted = scans.to_numpy(), votes.to_numpy()
    for s in range(log2_max + 1):
        groups = values.reshape(-1, 1 << s)
        shifted = np.concatenate([np.zeros((groups.shape[0], 1), values.dtype), groups[:, :-1]], axis=1)
        expect = [np.cumsum(groups, axis=1), np.minimum.accumulate(groups, axis=1),
                  np.maximum.accumulate(groups, axis=1), np.cumsum(shifted, axis=1),
                  np.cumprod(np.where(np.arange(1 << s) == 0, 1, shifted), axis=1),
                  np.minimum.accumulate(np.where(np.arange(1 << s) == 0, 1000, shifted), axis=1),
                  np.maximum.accumulate(np.where(np.arange(1 << s) == 0, -1000, shifted), axis=1),
                  np.cumprod(groups, axis=1)]
        for k, e in enumerate(expect):
            np.testing.assert_array_equal(got[s, k], e.reshape(-1), err_msg=f"{s} scan {k}")
        f = flag_values.reshape(-1, 1 << s) != 0
        for k, e in enumerate([f.all(axis=1), f.any(axis=1), f.all(axis=1) | ~f.any(axis=1)]):
            np.testing.assert_array_equal(voted[s, k], np.repeat(e, 1 << s).astype(np.int32), err_msg=f"{s} vote {k}")

    @wk.kernel
    def runtime_size(s: wk.i32):
        for i in range(n):
            x[i] = sub.reduce_add(x[i], s)

    @wk.kernel
    def no_size():
        for i in range(n):
            x[i] = sub.reduce_all_max(x[i])

    with pytest.raises(wk.CompileError, match="log2_size must be a compile-time int from 0 to 7"):
        runtime_size(2)
    with pytest.raises(wk.CompileError, match=r"reduce_all_max\(\) takes \(value, log2_size\); 'log2_size' is "
                                              "missing"):
        no_size()


def test_subgroup_float_reductions_and_scans(gpu):
    _needs_subgroups(gpu)
    size = _group_size()
    n = 128
    x = wk.field(wk.f32, shape=n)
    out = wk.field(wk.f32, shape=(6, n))

    @wk.kernel
    def run():
        wk.loop_config(block_dim=64)
        for i in range(n):
            v = x[i]
            out[0, i] = wk.simt.subgroup.reduce_add(v)
            out[1, i] = wk.simt.subgroup.reduce_min(v)
            out[2, i] = wk.simt.subgroup.reduce_max(v)
            out[3, i] = wk.simt.subgroup.inclusive_add(v)
            out[4, i] = wk.simt.subgroup.inclusive_max(v)
            out[5, i] = wk.simt.subgroup.exclusive_min(v)

    values = np.random.default_rng(6).integers(-64, 64, n).astype(np.float32) / 4   # exact sums
    x.from_numpy(values)
    run()
    got = out.to_numpy()
    groups = values.reshape(-1, size)
    np.testing.assert_array_equal(got[0], np.repeat(groups.sum(axis=1), size))
    np.testing.assert_array_equal(got[1], np.repeat(groups.min(axis=1), size))
    np.testing.assert_array_equal(got[2], np.repeat(groups.max(axis=1), size))
    np.testing.assert_array_equal(got[3], np.cumsum(groups, axis=1).reshape(-1))
    np.testing.assert_array_equal(got[4], np.maximum.accumulate(groups, axis=1).reshape(-1))
    exclusive = np.concatenate([np.full((groups.shape[0], 1), np.inf, np.float32),
                                np.minimum.accumulate(groups, axis=1)[:, :-1]], axis=1)
    np.testing.assert_array_equal(got[5], exclusive.reshape(-1))


@pytest.mark.parametrize("n", [256, 250])
def test_subgroup_operations_after_diverging_loops_see_every_lane(gpu, n):
    """Each lane first runs a loop of its own trip count (lanes leave it at different iterations), then the
    subgroup operations: every one of the subgroup's lanes takes part, however they diverged before (on CUDA
    the lanes of a warp need not be back in step after the loop). With n = 250 the last subgroup is partial:
    the lanes past the range's end take no part."""
    _needs_subgroups(gpu)
    size = _group_size()
    trips = wk.field(wk.i32, shape=n)
    out = wk.field(wk.i32, shape=(5, n))
    tile = min(size, 32).bit_length() - 1              # Quadrants' sized forms: groups of up to 32 lanes

    @wk.kernel
    def run():
        wk.loop_config(block_dim=64)
        for i in range(n):
            acc = 0
            for k in range(trips[i]):
                acc += (k * 7 + i) % 5
            out[0, i] = wk.simt.subgroup.reduce_add(acc)
            out[1, i] = wk.simt.subgroup.inclusive_add(acc)
            out[2, i] = wk.simt.subgroup.reduce_all_add_tiled(acc, tile)
            out[3, i] = wk.simt.subgroup.any_true(acc > 440)
            wk.simt.subgroup.sync()
            out[4, i] = wk.simt.subgroup.shuffle_xor(acc, 1)

    rng = np.random.default_rng(11)
    counts = rng.integers(0, 200, n).astype(np.int32)
    trips.from_numpy(counts)
    run()
    got = out.to_numpy()
    acc = np.array([sum((k * 7 + i) % 5 for k in range(c)) for i, c in enumerate(counts)], np.int64)
    padded = np.zeros(-(-n // size) * size, np.int64)
    padded[:n] = acc
    groups = padded.reshape(-1, size)
    np.testing.assert_array_equal(got[0], np.repeat(groups.sum(axis=1), size)[:n])
    np.testing.assert_array_equal(got[1], np.cumsum(groups, axis=1).reshape(-1)[:n])
    tiles = padded.reshape(-1, 1 << tile)
    whole = (n >> tile) << tile                         # a butterfly in a partial group reads lanes that do not run
    np.testing.assert_array_equal(got[2][:whole], np.repeat(tiles.sum(axis=1), 1 << tile)[:whole])
    np.testing.assert_array_equal(got[3], np.repeat((groups > 440).any(axis=1), size)[:n].astype(np.int32))
    full = (n // size) * size                          # lanes whose partner lane runs
    np.testing.assert_array_equal(got[4][:full], padded[np.arange(full) ^ 1])


def test_subgroup_votes_broadcasts_and_shuffles(gpu):
    _needs_subgroups(gpu)
    size = _group_size()
    n = 128
    x = wk.field(wk.i32, shape=n)
    out = wk.field(wk.i32, shape=(13, n))

    @wk.kernel
    def run():
        wk.loop_config(block_dim=64)
        for i in range(n):
            v = x[i]
            lane = wk.simt.subgroup.invocation_id()
            out[0, i] = lane
            out[1, i] = wk.simt.subgroup.group_size()
            out[2, i] = wk.simt.subgroup.elect()
            out[3, i] = wk.simt.subgroup.all_true(v > -500)
            out[4, i] = wk.simt.subgroup.any_true(v > 900)
            out[5, i] = wk.simt.subgroup.all_equal((v + 400) // 10000)     # 0 everywhere
            out[6, i] = wk.simt.subgroup.all_equal(v)
            out[7, i] = wk.simt.subgroup.broadcast_first(v)
            out[8, i] = wk.simt.subgroup.broadcast(v, 2)
            out[9, i] = wk.simt.subgroup.shuffle(v, (lane + 3) % wk.simt.subgroup.group_size())
            out[10, i] = wk.simt.subgroup.shuffle_xor(v, 1)
            out[11, i] = wk.simt.subgroup.shuffle_up(v, 1)
            out[12, i] = wk.simt.subgroup.shuffle_down(v, 2)
            wk.simt.subgroup.barrier()         # and Quadrants' names of the subgroup barrier and fence
            wk.simt.subgroup.memory_barrier()
            wk.simt.subgroup.sync()
            wk.simt.subgroup.mem_fence()

    values = np.random.default_rng(7).integers(-400, 1000, n).astype(np.int32)
    x.from_numpy(values)
    run()
    got = out.to_numpy()
    lanes = np.arange(n) % size
    groups = values.reshape(-1, size)
    base = np.arange(n) - lanes
    np.testing.assert_array_equal(got[0], lanes)
    np.testing.assert_array_equal(got[1], np.full(n, size))
    np.testing.assert_array_equal(got[2], (lanes == 0).astype(np.int32))
    np.testing.assert_array_equal(got[3], np.repeat((groups > -500).all(axis=1), size).astype(np.int32))
    np.testing.assert_array_equal(got[4], np.repeat((groups > 900).any(axis=1), size).astype(np.int32))
    np.testing.assert_array_equal(got[5], np.ones(n, np.int32))
    np.testing.assert_array_equal(got[6], np.repeat((groups == groups[:, :1]).all(axis=1), size).astype(np.int32))
    np.testing.assert_array_equal(got[7], values[base])
    np.testing.assert_array_equal(got[8], values[base + 2])
    np.testing.assert_array_equal(got[9], values[base + (lanes + 3) % size])
    np.testing.assert_array_equal(got[10], values[base + (lanes ^ 1)])
    up = lanes >= 1                       # lanes whose source exists (the others are unspecified)
    np.testing.assert_array_equal(got[11][up], values[(base + lanes - 1)[up]])
    down = lanes + 2 < size
    np.testing.assert_array_equal(got[12][down], values[(base + lanes + 2)[down]])


# ---- errors -----------------------------------------------------------------------------------------------------


# ---- warps (CUDA; the WGSL arches refuse them: tests/backends/wgsl/test_simt.py) ----------------------------------


