"""Taichi's `ti.ui` constants: key names, event types and camera projection modes. A window on screen
(screen.py) reports keys by these names; off-screen they are only ever compared against."""
from __future__ import annotations

from enum import IntEnum

SHIFT, ALT, CTRL, ESCAPE, RETURN, TAB, BACKSPACE = "Shift", "Alt", "Control", "Escape", "Return", "Tab", "BackSpace"
SPACE, CAPSLOCK = " ", "CapsLock"
UP, DOWN, LEFT, RIGHT = "Up", "Down", "Left", "Right"
LMB, MMB, RMB = "LMB", "MMB", "RMB"
PRESS, RELEASE = "Press", "Release"          # event types, as window.get_events(tag) takes them


class ProjectionMode(IntEnum):
    """camera.projection_mode(...): Taichi's 0 perspective, 1 orthogonal."""
    Perspective = 0
    Orthogonal = 1
