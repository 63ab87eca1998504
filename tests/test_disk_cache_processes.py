"""disk_cache.py shared by several processes: concurrent writers of one key, and `building`, which makes
processes asking for the same entry at once compile it once."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wgkern import disk_cache

ROOT = Path(__file__).resolve().parents[2]

_WRITER = """
import sys
from wgkern import disk_cache
tag = sys.argv[1].encode()
for i in range(300):
    disk_cache.store("cpu", "shared", ".o", tag * (1000 + i % 7))
"""


def _python(code: str, *args: str, cache: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "WK_CACHE_DIR": str(cache)}
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_concurrent_writers_of_one_key_leave_a_whole_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("WK_CACHE_DIR", str(tmp_path))
    tags = [b"A", b"B", b"C", b"D"]
    writers = [_python(_WRITER, tag.decode(), cache=tmp_path) for tag in tags]
    seen = set()
    while any(w.poll() is None for w in writers):
        data = disk_cache.load("cpu", "shared", ".o")
        if data is not None:                        # a reader sees a whole entry or none, never a mix
            assert len(set(data)) == 1 and data[:1] in tags and 1000 <= len(data) < 1007
            seen.add(data[:1])
    for writer in writers:
        assert writer.wait() == 0, writer.stderr.read()
    final = disk_cache.load("cpu", "shared", ".o")
    assert final is not None and final[:1] in tags
    assert sorted(p.name for p in (tmp_path / "cpu").iterdir()) == ["shared.o"]      # no temporary file left


_BUILDER = """
import sys, time
from wgkern import disk_cache
with disk_cache.building("cpu", "k"):
    if disk_cache.load("cpu", "k", ".o") is None:
        print("built", flush=True)
        time.sleep(float(sys.argv[1]))         # a slow compile
        disk_cache.store("cpu", "k", ".o", b"object code")
    else:
        print("loaded", flush=True)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="building() takes no lock without fcntl")
def test_processes_asking_for_one_entry_at_once_build_it_once(tmp_path):
    first = _python(_BUILDER, "1.5", cache=tmp_path)
    deadline = time.monotonic() + 60
    while not (tmp_path / disk_cache.LOCKS / "cpu-k.lock").exists():        # the first holds the lock (it is made, then locked)
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.02)
    time.sleep(0.3)
    second = _python(_BUILDER, "0", cache=tmp_path)
    outputs = [first.communicate(timeout=60)[0], second.communicate(timeout=60)[0]]
    assert outputs == ["built\n", "loaded\n"]
