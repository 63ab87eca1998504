"""runtime/disk_cache.py: keys, the digest that makes a damaged entry read as absent, best-effort writes."""
from __future__ import annotations

import os

from wgkern.runtime import disk_cache


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
