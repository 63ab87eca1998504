"""disk_cache.py: keys, the digest that makes a damaged entry read as absent, best-effort writes."""
from __future__ import annotations

import os

import pytest

from wgkern import disk_cache


def test_entries_round_trip_under_wk_cache_dir(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WK_CACHE_DIR", str(tmp_path))
    key = disk_cache.cache_key("module text", "target")
    assert disk_cache.load("cpu", key, ".o") is None
    disk_cache.store("cpu", key, ".o", b"\x7fELF object")
    assert disk_cache.load("cpu", key, ".o") == b"\x7fELF object"
    assert [p.name for p in (tmp_path / "cpu").iterdir()] == [key + ".o"]      # no temporary file left


def test_keys_delimit_their_parts() -> None:
    assert disk_cache.cache_key("ab", "c") != disk_cache.cache_key("a", "bc")
    assert disk_cache.cache_key("x") == disk_cache.cache_key("x") and len(disk_cache.cache_key("x")) == 64


def test_a_damaged_entry_reads_as_absent(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("WK_CACHE_DIR", str(tmp_path))
    disk_cache.store("cpu", "k", ".o", b"0123456789" * 10)
    path = tmp_path / "cpu" / "k.o"
    path.write_bytes(path.read_bytes()[:-3])                       # truncated
    assert disk_cache.load("cpu", "k", ".o") is None
    data = bytearray(path.read_bytes())
    path.write_bytes(bytes(data[:40]) + b"X" + bytes(data[41:]))   # one byte changed
    assert disk_cache.load("cpu", "k", ".o") is None


def test_an_unwritable_cache_is_skipped(tmp_path, monkeypatch) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the cache folder would go")
    monkeypatch.setenv("WK_CACHE_DIR", str(blocker))
    disk_cache.store("cpu", "k", ".o", b"data")                    # no exception
    assert disk_cache.load("cpu", "k", ".o") is None


def test_the_default_folder_follows_xdg_cache_home(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("WK_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert disk_cache.cache_directory("cuda") == tmp_path / "wgkern" / "cuda"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert str(disk_cache.cache_root()) == os.path.join(os.path.expanduser("~"), ".cache", "wgkern")


@pytest.fixture
def settings(monkeypatch):
    """disk_cache's settings are restored after the test (wk.init reconfigures them anyway)."""
    monkeypatch.setattr(disk_cache, "_settings", disk_cache.Settings())
    monkeypatch.setattr(disk_cache, "_stores", 0)
    return disk_cache


def _fill(kind: str, sizes: list[int], start: float) -> list:
    """Entries of the given sizes, the first the oldest."""
    paths = []
    for k, size in enumerate(sizes):
        disk_cache.store(kind, f"e{k}", ".o", b"x" * size)
        path = disk_cache.cache_directory(kind) / f"e{k}.o"
        os.utime(path, (start + k, start + k))
        paths.append(path)
    return paths


def test_past_the_limit_the_oldest_entries_go_until_a_quarter_is_free(tmp_path, settings) -> None:
    settings.configure(root=str(tmp_path), max_bytes=10_000)
    paths = _fill("cpu", [3000, 3000, 3000], 1000.0)          # 9 KB (+ digests): under the limit
    assert all(p.exists() for p in paths)
    settings.store("cuda", "late", ".ptx", b"y" * 3000)        # the store after CLEAN_EVERY stores checks
    settings.clean()
    survivors = sorted(p.name for p in tmp_path.rglob("*") if p.is_file())
    assert survivors == ["e2.o", "late.ptx"]                 # oldest first, until <= 7.5 KB
    assert sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file()) <= 7500


def test_lru_keeps_what_was_read_and_fifo_does_not(tmp_path, settings) -> None:
    for policy, kept in (("lru", "e0.o"), ("fifo", "e1.o")):
        root = tmp_path / policy
        settings.configure(root=str(root), max_bytes=6500, policy=policy, factor=0.05)
        _fill("cpu", [3000, 3000], 1000.0)
        assert settings.load("cpu", "e0", ".o") is not None    # a hit: refreshed under lru only
        settings.store("cpu", "e2", ".o", b"z" * 3000)
        settings.clean()
        names = sorted(p.name for p in (root / "cpu").iterdir())
        assert kept in names and "e2.o" in names and len(names) == 2, (policy, names)


def test_policy_never_keeps_everything(tmp_path, settings) -> None:
    settings.configure(root=str(tmp_path), max_bytes=100, policy="never")
    _fill("cpu", [500, 500], 1000.0)
    settings.clean()
    assert len(list((tmp_path / "cpu").iterdir())) == 2


def test_taichis_offline_cache_options_act_and_are_checked(tmp_path) -> None:
    import wgkern as wk
    wk.reset()
    wk.init(arch=wk.cpu, offline_cache_file_path=str(tmp_path / "ticache"), offline_cache_max_size_of_files=1 << 20,
            offline_cache_cleaning_policy="fifo", offline_cache_cleaning_factor=0.5)
    assert disk_cache.cache_root() == tmp_path / "ticache"
    assert (disk_cache._settings.max_bytes, disk_cache._settings.policy, disk_cache._settings.factor) == \
        (1 << 20, "fifo", 0.5)
    x = wk.field(wk.f32, shape=4)

    @wk.kernel
    def bump():
        for i in x:
            x[i] += 3.0

    bump()
    assert list((tmp_path / "ticache" / "cpu").glob("*.o"))      # compiled object code went there
    wk.reset()
    for bad, message in (({"offline_cache_cleaning_policy": "sometimes"}, "offline_cache_cleaning_policy"),
                         ({"offline_cache_max_size_of_files": -5}, "offline_cache_max_size_of_files"),
                         ({"offline_cache_cleaning_factor": 1.5}, "offline_cache_cleaning_factor")):
        with pytest.raises(ValueError, match=message):
            wk.init(arch=wk.cpu, **bad)
    wk.init(arch=wk.cpu)
    assert disk_cache._settings == disk_cache.Settings()        # each wk.init configures the cache afresh
    wk.reset()
