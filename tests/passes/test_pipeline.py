"""The pass order and the loop that runs, verifies and dumps it (wgkern/passes/pipeline.py)."""
from __future__ import annotations

import importlib

import pytest

from wgkern.errors import InternalCompilerError
from wgkern.ir import nodes as ir
from wgkern.ir.builder import IRBuilder
from wgkern.ir.ops import BinaryOpKind
from wgkern.lang import types as T
from wgkern.passes import pipeline

X = ir.ContainerSlot(name="x", kind="field", dtype=T.f32, ndim=1, shape=(8,))


def _kernel(name: str = "fill") -> ir.KernelIR:
    b = IRBuilder()
    loop = b.range_for(b.const(0, T.i32), b.const(8, T.i32))
    with b.at(loop.body):
        i = b.loop_index(loop)
        # mixed dtypes on purpose: typecheck must repair them before the verifier sees typed IR
        value = b.insert(ir.BinaryOp(op=BinaryOpKind.MUL, lhs=i, rhs=b.const(0.5, T.f32), dtype=None))
        b.insert(ir.GlobalStore(ptr=b.global_ptr(X, [i]), value=value))
    return ir.KernelIR(name, [], [X], b.block)


def test_forward_pipeline_lists_pass_modules_with_name_run_and_docstring():
    names = [stage.NAME for stage in pipeline.FORWARD]
    assert names == ["typecheck", "simplify", "offload", "simplify"]
    for stage in pipeline.FORWARD:
        assert callable(stage.run) and stage.__doc__ and len(stage.__doc__.splitlines()) >= 2


def test_run_pipeline_returns_a_verified_offloaded_kernel():
    result = pipeline.run_pipeline(pipeline.FORWARD, _kernel(), dump_dir=None)
    assert isinstance(result, ir.OffloadedKernel)
    assert [t.kind for t in result.tasks] == ["range"]


def test_dump_dir_gets_one_file_per_stage(tmp_path):
    pipeline.run_pipeline(pipeline.FORWARD, _kernel("fill"), dump_dir=str(tmp_path))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["fill.00.frontend.ir", "fill.01.typecheck.ir", "fill.02.simplify.ir", "fill.03.offload.ir",
                     "fill.04.simplify.ir"]
    assert (tmp_path / "fill.04.simplify.ir").read_text().startswith("offloaded fill()")
    assert "kernel fill()" in (tmp_path / "fill.00.frontend.ir").read_text()


def test_dump_dir_defaults_to_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("WK_DUMP_IR", str(tmp_path / "dumps"))
    pipeline.run_pipeline(pipeline.FORWARD, _kernel("env"))
    assert len(list((tmp_path / "dumps").glob("env.*.ir"))) == 5


def test_a_stage_that_breaks_the_ir_is_caught_by_the_verifier():
    class Breaker:
        NAME = "breaker"

        @staticmethod
        def run(kernel):
            kernel.body.stmts.reverse()     # uses before definitions
            return kernel

    with pytest.raises(InternalCompilerError, match="after breaker: .*not defined before it"):
        pipeline.run_pipeline((Breaker,), _kernel(), dump_dir=None)


def test_a_pipeline_without_offload_is_an_internal_error():
    typecheck = importlib.import_module("wgkern.passes.typecheck")
    with pytest.raises(InternalCompilerError, match="without offload"):
        pipeline.run_pipeline((typecheck,), _kernel(), dump_dir=None)
