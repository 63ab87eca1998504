"""Helpers shared by the demos: a stdlib-only PNG writer and an optional on-screen window.

Not a demo itself (the leading underscore hides it from `python -m wgkern demo --list`)."""
from __future__ import annotations

import struct
import time
import zlib
from typing import Callable, Iterator

import numpy as np


def write_png(path: str, rgba: np.ndarray) -> None:
    """Write an (H, W, 4) uint8 RGBA image as a PNG with zlib + struct only (PLATFORM.md 4.1)."""
    rgba = np.ascontiguousarray(rgba, dtype=np.uint8)
    height, width, _ = rgba.shape
    raw = b"".join(b"\x00" + rgba[row].tobytes() for row in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def to_rgba(rgb: np.ndarray) -> np.ndarray:
    """Float RGB in [0, 1] of shape (H, W, 3) -> uint8 RGBA."""
    out = np.empty(rgb.shape[:2] + (4,), np.uint8)
    out[..., :3] = np.clip(rgb * 255.0 + 0.5, 0, 255).astype(np.uint8)
    out[..., 3] = 255
    return out


def show(frames, title: str) -> bool:
    """Show frames (an iterator of RGBA arrays) in a window; False when no GUI backend is installed."""
    try:
        from rendercanvas.auto import RenderCanvas, loop
    except Exception:  # noqa: BLE001 - no GUI toolkit: the caller falls back to a PNG
        return False
    first = next(frames)
    canvas = RenderCanvas(size=(first.shape[1], first.shape[0]), title=title, update_mode="continuous")
    context = canvas.get_context("bitmap")
    state = {"frame": first}

    @canvas.request_draw
    def draw() -> None:
        context.set_bitmap(state["frame"])
        state["frame"] = next(frames, state["frame"])

    loop.run()
    return True


def run_frames(name: str, simulate: Callable[[int], Iterator[np.ndarray]], steps: int, headless: bool,
               out: str | None, title: str) -> int:
    """A frame-producing demo's main loop: a window when asked for and available, else run `steps` steps and
    write the last frame to `out` (default `<name>.png`), reporting the time per step."""
    if not headless and show(simulate(10**9), title):
        return 0
    start = time.perf_counter()
    frame = None
    for frame in simulate(steps):
        pass
    elapsed = time.perf_counter() - start
    out = out or f"{name}.png"
    write_png(out, frame)
    print(f"{name}: {steps} steps in {elapsed:.2f} s ({elapsed / steps * 1e3:.2f} ms/step); wrote {out}")
    return 0
