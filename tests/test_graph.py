"""wk.graph (Taichi's ti.graph): recorded dispatches with symbolic arguments replay like direct kernel calls."""
from __future__ import annotations

import numpy as np
import pytest

import wgkern as wk


def test_graph_replays_its_dispatches_with_the_given_arguments(arch):
    @wk.kernel
    def scale(a: wk.types.ndarray(ndim=1), factor: wk.f32):
        for i in a:
            a[i] *= factor

    @wk.kernel
    def shift(a: wk.types.ndarray(ndim=1), b: wk.types.ndarray(ndim=1)):
        for i in a:
            b[i] = a[i] + 1.0

    g = wk.graph
    sym_a = g.Arg(g.ArgKind.NDARRAY, "a", dtype=wk.f32, ndim=1)
    sym_b = g.Arg(g.ArgKind.NDARRAY, "b", wk.f32, 1)
    sym_k = g.Arg(g.ArgKind.SCALAR, "k", wk.f32)
    builder = g.GraphBuilder()
    step = builder.create_sequential()
    step.dispatch(scale, sym_a, sym_k)
    step.dispatch(shift, sym_a, sym_b)
    for _ in range(3):
        builder.append(step)
    builder.dispatch(scale, sym_b, 0.5)                  # a plain value is fixed at dispatch
    graph = builder.compile()

    a, b = wk.ndarray(wk.f32, 4), wk.ndarray(wk.f32, 4)
    a.from_numpy(np.arange(4, dtype=np.float32))
    graph.run({"a": a, "b": b, "k": 2.0})
    np.testing.assert_allclose(a.to_numpy(), np.arange(4) * 8)
    np.testing.assert_allclose(b.to_numpy(), (np.arange(4) * 8 + 1) * 0.5)
    assert set(graph.args) == {"a", "b", "k"}

    with pytest.raises(wk.ArgumentError, match="needs the argument\\(s\\) k"):
        graph.run({"a": a, "b": b})
    with pytest.raises(wk.ArgumentError, match="'b' has ndim 1, got an ndarray of shape \\(2, 2\\)"):
        graph.run({"a": a, "b": wk.ndarray(wk.f32, (2, 2)), "k": 1.0})
