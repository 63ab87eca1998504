"""Helpers shared by the demos: where a headless run writes its PNG, an optional on-screen window, and the frame
loop that times the steps and puts the title and live figures on every frame shown or written (_overlay.py;
PNG output: wgkern/png.py).

A demo describes itself with a `Demo` and yields `Frame`s from its `simulate(steps)`; `run_frames` does the rest.
Not a demo itself (the leading underscore hides it from `python -m wgkern demo --list`)."""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

import numpy as np

from _overlay import draw_overlay, figures_line, format_rate
from wgkern.png import to_rgba, write_png


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


@dataclass(frozen=True)
class Demo:
    """What a demo's frames say about it: `name` (its file's stem, and its PNG's), `title` (drawn on every frame
    and the window's title), `count` (what it simulates: "32768 particles"), `unit` (what one step is called)
    and `arch` (where it runs)."""
    name: str
    title: str
    count: str
    arch: str
    unit: str = "step"


@dataclass(frozen=True)
class Frame:
    """One picture of a running demo: `step` steps are done; `draw()` renders the state now as float RGB rows
    from the top, (H, W, 3), and is called before the simulation resumes; `figures` are the demo's own live
    figures, formatted ("loss 0.0123 m^2")."""
    step: int
    draw: Callable[[], np.ndarray]
    figures: tuple[str, ...] = ()


def compose(demo: Demo, frame: Frame, picture: np.ndarray, total: int | None,
            per_second: float | None) -> np.ndarray:
    """`picture` (frame.draw()'s) with the demo's title and the frame's figures drawn over its top, as RGBA."""
    canvas = np.array(picture, np.float32)
    draw_overlay(canvas, demo.title, figures_line(demo.unit, frame.step, total, frame.figures, demo.count,
                                                  per_second, demo.arch))
    return to_rgba(canvas)


def live_frames(demo: Demo, frames: Iterable[Frame]) -> Iterator[np.ndarray]:
    """The composed frames of an endless run, each with the steps per second measured since the one before."""
    previous_step, previous_time = 0, time.perf_counter()
    for frame in frames:
        picture = frame.draw()
        now = time.perf_counter()
        per_second = (frame.step - previous_step) / (now - previous_time) if now > previous_time else None
        previous_step, previous_time = frame.step, now
        yield compose(demo, frame, picture, None, per_second)


def show(frames: Iterator[np.ndarray], title: str) -> bool:
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


def run_headless(demo: Demo, frames: Iterable[Frame], steps: int) -> tuple[np.ndarray, float]:
    """Run `steps` steps; (the last frame composed, the seconds taken up to and including drawing it). The
    figures drawn are the totals: `steps` of `steps`, at the mean rate."""
    start = time.perf_counter()
    for frame in frames:
        if frame.step == steps:
            picture = frame.draw()
            elapsed = time.perf_counter() - start
            return compose(demo, frame, picture, steps, steps / elapsed), elapsed
    raise RuntimeError(f"{demo.name}: the simulation ended without a frame at step {steps}")


def run_frames(demo: Demo, simulate: Callable[[int], Iterable[Frame]], steps: int, headless: bool,
               out: str | None) -> int:
    """A demo's main loop: a window showing every frame when asked for and available, else run `steps` steps
    and write the last frame to `out` (default: output_path's), reporting the time per step."""
    if not headless and show(live_frames(demo, simulate(10**9)), demo.title):
        return 0
    image, elapsed = run_headless(demo, simulate(steps), steps)
    out = output_path(demo.name, out)
    write_png(out, image)
    print(f"{demo.name}: {steps} {demo.unit}s in {elapsed:.2f} s ({format_rate(steps / elapsed, demo.unit)}, "
          f"{elapsed / steps * 1e3:.2f} ms/{demo.unit}); wrote {out}")
    return 0
