"""One local Ray instance with two CPUs for every test of tests/distributed (starting Ray takes seconds), and
the rule that these tests fail, not skip, under CI=true when Ray is missing (the test extra installs it)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
_IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        if _IN_CI:
            pytest.fail(f"ray is not installed ({exc}): CI installs it with the test extra "
                        "(pip install -e '.[test]')")
        pytest.skip(f"ray is not installed ({exc}): pip install 'wgkern[ray]'")
    return ray


@pytest.fixture(scope="package")
def ray_cluster(tmp_path_factory) -> Iterator[Any]:
    """Ray on this machine with 2 CPUs and no GPU; its workers import this checkout's wgkern and tests, and they
    and this process share one offline cache folder of their own."""
    ray = import_ray()
    cache = tmp_path_factory.mktemp("actor-cache")
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    ray.init(num_cpus=2, num_gpus=0, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": path, "WK_CACHE_DIR": str(cache)}})
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("WK_CACHE_DIR", str(cache))
            yield ray
    finally:
        ray.shutdown()
