"""Helpers shared by the demos: an optional on-screen window and the frame loop (PNG output: wgkern/png.py).

Not a demo itself (the leading underscore hides it from `python -m wgkern demo --list`)."""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from wgkern.png import to_rgba, write_png  # noqa: F401 - the demos import them from here


def default_folder() -> str:
    """./wgkern-out, unless the current directory lies inside wgkern's own checkout or install folder: a demo
    never writes into the package or the repository unasked, so there it uses wgkern-out in the temporary
    directory."""
    import wgkern
    here = Path.cwd().resolve()
    package_home = Path(wgkern.__file__).resolve().parent.parent
    if here == package_home or package_home in here.parents:
        return os.path.join(tempfile.gettempdir(), "wgkern-out")
    return os.path.join(os.curdir, "wgkern-out")


def output_path(name: str, out: str | None) -> str:
    """Where a headless run writes its PNG: `out` when given, else <name>.png in $WK_DEMO_DIR or, without it, in
    default_folder()."""
    if out:
        return out
    folder = os.environ.get("WK_DEMO_DIR") or default_folder()
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, f"{name}.png")


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
    write the last frame to `out` (default: output_path's), reporting the time per step."""
    if not headless and show(simulate(10**9), title):
        return 0
    start = time.perf_counter()
    frame = None
    for frame in simulate(steps):
        pass
    elapsed = time.perf_counter() - start
    out = output_path(name, out)
    write_png(out, frame)
    print(f"{name}: {steps} steps in {elapsed:.2f} s ({elapsed / steps * 1e3:.2f} ms/step); wrote {out}")
    return 0
