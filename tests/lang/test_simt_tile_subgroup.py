"""A register tile (wk.simt.Tile16x16 / Tile32x32) in a subgroup of fewer than its N invocations raises
wk.SubgroupSizeError at the next wait, naming the kernel, the tile's line, N and the subgroup size, instead of
computing garbage (backends/wgsl/simt.py check_tile_subgroup, runtime.py). lavapipe's subgroups have 8 invocations,
or 16 with LP_NATIVE_VECTOR_WIDTH=512, a setting read when the process starts: the programs run in subprocesses
(test_simt_tile.py's). Where the subgroups are wide enough (CUDA's warp, NVIDIA's Vulkan) there is nothing to
raise, and the programs say so and are skipped."""
from __future__ import annotations

import json

import pytest

import wgkern as wk
from tests.lang.test_simt_tile import FACTOR, start_tile_program, run_tile_program

# Prepended to a program: the subgroup size (the value the tiles' check reads) of a block of `WANT` threads here;
# exits (skip) when the subgroups hold `WANT` rows or more, as nothing is then too small. (lavapipe's
# subgroupAdd over a 32-thread block of 8-invocation subgroups gave 16, so the size is not counted that way.)
LANES = """
lanes = qd.field(qd.i32, shape=())

@qd.kernel
def count_lanes():
    qd.loop_config(block_dim=WANT)
    for i in range(WANT):
        lanes[None] = qd.simt.subgroup.group_size()

count_lanes()
if lanes[None] >= WANT:
    print(json.dumps({"skip": f"the subgroups here have {lanes[None]} invocations, enough for the tile"}))
    sys.exit(0)
"""


def lanes_below(want: int) -> str:
    return LANES.replace("WANT", str(want))


def test_blocked_cholesky_in_eight_lane_subgroups_raises_naming_the_tile(gpu, tmp_path):
    done = start_tile_program(tmp_path, gpu, lanes_below(16) + FACTOR, wide=False)
    if done.returncode == 0:
        assert "skip" in json.loads(done.stdout.strip().splitlines()[-1]), done.stdout[-2000:]
        pytest.skip(json.loads(done.stdout.strip().splitlines()[-1])["skip"])
    error = done.stderr.strip().splitlines()
    assert any(line.startswith("wgkern.errors.SubgroupSizeError: ") for line in error), done.stderr[-3000:]
    text = done.stderr
    assert "kernel run: wk.simt.Tile16x16 needs a subgroup of at least 16 invocations" in text
    assert "in subgroups of 8" in text and "must not be used" in text
    assert "LP_NATIVE_VECTOR_WIDTH=512" in text
    # the first tile every invocation makes: factor()'s diagonal block, at its line
    assert "L_kk = T.eye(dtype=qd.f32)" in text


AFTER_THE_ERROR = """
n = 16
a = qd.field(qd.f32, shape=(n, n))
a.from_numpy(np.arange(n * n, dtype=np.float32).reshape(n, n))

@qd.kernel
def copy_rows():
    qd.loop_config(block_dim=n)
    for i in range(n):
        t = qd.simt.Tile16x16.zeros()
        t[:] = a[0:n, 0:n]
        a[0:n, 0:n] = t

@qd.kernel
def plain():
    for i, j in a:
        a[i, j] = i * 100 + j

def message(run):
    try:
        run()
    except qd.SubgroupSizeError as exc:
        return str(exc)
    return None

first = message(lambda: (copy_rows(), a.to_numpy()))
plain()
after = a.to_numpy()
second = message(lambda: (copy_rows(), qd.sync()))
print(json.dumps({"first": first, "second": second, "plain": after.tolist()}))
"""


def test_the_error_is_raised_at_each_wait_and_the_process_goes_on(gpu, tmp_path):
    out = run_tile_program(tmp_path, gpu, lanes_below(16) + AFTER_THE_ERROR, wide=False)
    if "skip" in out:
        pytest.skip(out["skip"])
    for message in (out["first"], out["second"]):
        assert message is not None and "kernel copy_rows: wk.simt.Tile16x16 needs a subgroup of at least 16" in message
        assert "t = qd.simt.Tile16x16.zeros()" in message        # the line of the tile
    # the kernel after the error ran on a cleared flag and gives its exact integers (all below 2^24)
    assert out["plain"] == [[i * 100 + j for j in range(16)] for i in range(16)]


TILE32_IN_SIXTEEN = """
N = 32
e = qd.field(qd.f32, shape=(N, N))

@qd.kernel
def identity():
    qd.loop_config(block_dim=N)
    for i in range(N):
        t = qd.simt.Tile32x32.eye()
        e[0:N, 0:N] = t

try:
    identity()
    qd.sync()
    message = None
except qd.SubgroupSizeError as exc:
    message = str(exc)
print(json.dumps({"message": message}))
"""


def test_tile32_in_sixteen_lane_subgroups_points_to_wider_gpus(gpu, tmp_path):
    out = run_tile_program(tmp_path, gpu, lanes_below(32) + TILE32_IN_SIXTEEN, wide=True)
    if "skip" in out:
        pytest.skip(out["skip"])
    message = out["message"]
    assert message is not None and "wk.simt.Tile32x32 needs a subgroup of at least 32 invocations" in message
    assert "lavapipe has no 32-invocation subgroups" in message and "NVIDIA" in message


def test_only_kernels_that_make_tiles_check_the_subgroup(gpu):
    if gpu != wk.vulkan:
        pytest.skip("the WGSL source of the check")
    n = 16
    a = wk.field(wk.f32, shape=(n, n))

    @wk.kernel
    def with_tile():
        wk.loop_config(block_dim=n)
        for i in range(n):
            t = wk.simt.Tile16x16.eye()
            a[0:n, 0:n] = t

    @wk.kernel
    def with_subgroups():
        wk.loop_config(block_dim=n)
        for i in range(n):
            a[i, 0] = wk.cast(wk.simt.subgroup.shuffle(i, 0), wk.f32)

    tiled = with_tile.source()
    assert tiled.count("if (wk_subgroup_size < 16u) {") == 1 and "wk_print" in tiled
    plain = with_subgroups.source()
    assert "wk_subgroup_size <" not in plain and "wk_print" not in plain
