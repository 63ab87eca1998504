"""`python -m wgkern demo sweep` (demos/sweep.py) on two CPU actors: each sweep point's result is what the same
optimisation gives in one process, and a headless run writes its PNG with a progress bar on the way."""
from __future__ import annotations

import numpy as np

import wgkern as wk
from tests.demo_modules import demo
from wgkern.__main__ import main
from wgkern.distributed import DevicePool
from wgkern.png import read_png


def test_each_sweep_point_is_the_single_process_optimisation(ray_cluster):
    sweep = demo("sweep")
    values = sweep.drags(3)
    with DevicePool(sweep.program, arch=wk.cpu, actors=2) as pool:
        results = sweep.run_sweep(pool, values, 8)
    wk.init(arch=wk.cpu, cpu_max_num_threads=1)        # one thread, as each CPU actor has
    try:
        local = sweep.program()
        for drag, result in zip(values, results):
            expected = sweep.optimise(local, drag, 8)
            # the same f32 kernels: each cannon's gradient and speed are its own, so the same bits; the loss is
            # a sum of 64 positive terms whose order may differ between processes (how a CPU actor chunks its
            # threads), and reordering such a sum in f32 moves it by at most 2 (n - 1) u of itself, u = 2^-24
            assert result["drag"] == drag
            np.testing.assert_array_equal(result["speed"], expected["speed"].to_numpy())
            np.testing.assert_allclose(result["losses"], expected["losses"], rtol=2 * (local.cannons - 1) * 2.0**-24,
                                       atol=0)
            assert result["losses"][-1] < result["losses"][0]      # the descent lowers the miss
    finally:
        wk.reset()


def test_headless_run_writes_the_png_with_a_progress_bar(ray_cluster, tmp_path, capsys):
    out = tmp_path / "sweep.png"
    assert main(["demo", "sweep", "--headless", "--arch", "cpu", "--actors", "2", "--sweep", "4", "--steps", "3",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "sweep: 4 drag coefficients x 3 gradient steps on 2 actors (cpu: LLVM CPU" in printed
    assert "[##############################] 4/4 sweep points" in printed
    assert f"wrote {out}" in printed
    module = demo("sweep")
    assert read_png(str(out)).shape == (module.HEIGHT, module.WIDTH, 4)
