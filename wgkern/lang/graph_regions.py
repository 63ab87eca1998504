"""Quadrants' fork/join regions of graph kernels, as the user names them: `wk.graph.parallel_context()` opens a
region whose `with wk.graph.parallel():` sections are independent sequences of work, and everything after the
region waits for all of them. Kernel code is translated by frontend/graph_regions.py (the sections run one after
another, in the order written, each section's outermost loops in parallel: what Quadrants does on every backend
but CUDA graphs, with the same results). In Python scope both are context managers that do nothing, so helpers
called from Python and from kernels alike still run."""
from __future__ import annotations

import contextlib
from typing import Iterator


@contextlib.contextmanager
def parallel_context() -> Iterator[None]:
    """`with wk.graph.parallel_context():` in a `@wk.kernel(graph=True)` kernel: a region holding only
    `with wk.graph.parallel():` sections (optionally under `if wk.static(...)` or `for ... in wk.static(...)`).
    The sections must not race one another (none reads what another writes); the work after the region sees
    all of their writes."""
    yield


@contextlib.contextmanager
def parallel() -> Iterator[None]:
    """`with wk.graph.parallel():` directly in a `wk.graph.parallel_context()` region: one section, straight-line
    task work (no `wk.graph.do_while` loop, checkpoint, region or section inside it)."""
    yield
