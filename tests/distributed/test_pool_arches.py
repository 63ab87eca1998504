"""DevicePool.map on every arch available here (two actors each): a sweep whose results come back as numpy,
in the order of the parameters."""
from __future__ import annotations

import numpy as np

from tests.distributed import programs
from tests.distributed.test_pool import WEIGHTS
from wgkern.distributed import DevicePool


def test_map_runs_a_sweep_on_two_actors_with_results_as_numpy_in_order(ray_cluster, arch):
    seen = []
    with DevicePool(programs.build, arch=arch, actors=2) as pool:
        assert [d["arch"] for d in pool.devices] == [arch.value] * 2
        assert len({d["pid"] for d in pool.devices}) == 2
        results = pool.map(programs.gradient_at, WEIGHTS, progress=lambda done, total: seen.append((done, total)))
        nested = pool.run_all(lambda p: {"x": p.x, "pair": (p.x.grad, 1)})
    assert seen == [(k, len(WEIGHTS)) for k in range(1, len(WEIGHTS) + 1)]
    for weight, result in zip(WEIGHTS, results):
        assert isinstance(result, np.ndarray) and result.dtype == np.float32
        np.testing.assert_array_equal(result, programs.expected_gradient(weight))
    for value in nested:                   # fields inside containers of the result convert too
        assert isinstance(value["x"], np.ndarray) and isinstance(value["pair"][0], np.ndarray)
        assert value["pair"][1] == 1
