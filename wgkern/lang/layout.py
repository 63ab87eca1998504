"""`wk.Layout` (Quadrants' `qd.Layout`): how the components of vector, matrix and struct fields are placed.

`layout=wk.Layout.AOS` (the default) keeps each element's components together; `wk.Layout.SOA` gives each
component (a struct's member, a vector's entry) an array of its own. Here a struct field always stores one array
per member, each vector or matrix member with its components together (Quadrants' SOA for structs), and a vector
or matrix field stores its components together (AOS). The layout is where data sits in memory, never what a
program reads or writes: kernels, host indexing and to_numpy()/from_numpy() give the same values with either."""
from __future__ import annotations

import enum
from typing import Any


class Layout(enum.IntEnum):
    """Quadrants' layout enum (same names and values)."""
    AOS = 0
    SOA = 1
    NULL = 2


def check_layout(layout: Any, what: str) -> Layout:
    """`layout` as a Layout; a TypeError naming `what` (the call it was given to) for anything else."""
    if isinstance(layout, Layout):
        return layout
    if isinstance(layout, enum.Enum) and type(layout).__name__ == "Layout" and layout.name in Layout.__members__:
        return Layout[layout.name]          # Quadrants' own enum, from a program that mixes the two
    raise TypeError(f"{what}(layout={layout!r}): give wk.Layout.AOS or wk.Layout.SOA")
