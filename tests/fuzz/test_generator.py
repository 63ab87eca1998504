"""The program generator: the same text for the same seed, every construct drawn over a range of seeds, code that
Python and wgkern compile, loop iterations within the caps."""
from __future__ import annotations

import ast

import numpy as np
import pytest

import wgkern as wk
from wgkern.fuzz.generator import DEFAULT_MAX_TRIP, ITERATION_CAP, LONG_MAX_TRIP, generate
from wgkern.fuzz.runner import ProgramRun, draw_inputs

CONSTRUCTS = {
    # loops and control flow
    "range_table", "range_lo_hi", "range_computed_index", "range_scalar_arg", "range_const", "range_dependent",
    "range_dependent_table", "while_counter", "while_float_exit", "if", "if_else", "break", "continue",
    # values and effects
    "carried_update", "accumulator", "accumulate", "func_call", "func_loop", "atomic_loss", "atomic_out",
    "atomic_atomic_add", "store",
    # parallel loops and differentiation
    "range", "struct_for", "ndrange_1d", "ndrange_2d", "tape", "kernel_grad",
    # math
    "op_sin", "op_cos", "op_tanh", "op_exp", "op_log", "op_sqrt", "op_pow", "op_powvar", "op_div", "op_mul",
    "op_add", "op_sub", "op_neg", "op_square",
}


def test_same_seed_same_program_and_seeds_differ():
    for seed in range(20):
        assert generate(seed).source == generate(seed).source
        assert generate(seed, long=True).source == generate(seed, long=True).source
    assert len({generate(seed).source for seed in range(20)}) == 20


def test_every_construct_is_drawn_over_200_seeds():
    seen: set[str] = set()
    for seed in range(200):
        seen |= generate(seed).constructs
    assert CONSTRUCTS <= seen, sorted(CONSTRUCTS - seen)


def test_programs_parse_and_stay_within_the_iteration_caps():
    for seed in range(200):
        program = generate(seed)
        ast.parse(program.source, filename=f"seed {seed}")
        assert program.iterations <= ITERATION_CAP
        assert all(t.high <= DEFAULT_MAX_TRIP for t in program.tables)
    long = [generate(seed, long=True) for seed in range(30)]
    assert all(p.iterations <= ITERATION_CAP + LONG_MAX_TRIP for p in long)
    assert sum("long_loop" in p.constructs for p in long) >= 10
    assert any(t.high == LONG_MAX_TRIP for p in long for t in p.tables)


def test_generated_kernels_compile_and_run_forward(tmp_path):
    # wgkern compiles each program's compute (and reduce) kernel and runs it on random inputs: the generator
    # only writes what the language accepts (scoping, funcs, ndrange, while, break/continue)
    for seed in range(12):
        program = generate(seed)
        path = tmp_path / f"wk_fuzz_{seed}.py"
        path.write_text(program.source)
        run = ProgramRun(program, path, "cpu", fp64=False)
        try:
            run.set_inputs(draw_inputs(program, seed, 0))
            result = run.evaluate()
            assert np.isfinite(result.objective)
            assert np.all(result.trace >= 0)
        finally:
            wk.reset()


@pytest.mark.parametrize("seed", [3, 11])
def test_table_bounds_follow_their_base(seed):
    program = generate(seed)
    inputs = draw_inputs(program, seed, 0)
    for t in program.tables:
        values = inputs.tables[t.name] - (inputs.tables[t.base] if t.base else 0)
        assert values.min() >= t.low and values.max() <= t.high


def test_programs_follow_the_global_data_access_rule_and_index_in_bounds(tmp_path):
    # debug=True checks the access rule at compile time where it can be decided, and bounds-checks every global
    # access at run time (an index past N raises there)
    for seed in (0, 2, 3, 6):
        program = generate(seed)
        path = tmp_path / f"wk_fuzz_{seed}.py"
        path.write_text(program.source)
        run = ProgramRun(program, path, "cpu", fp64=False, stack_options={"default_ad_stack_size": 4096},
                          debug=True)
        try:
            run.set_inputs(draw_inputs(program, seed, 0))
            _, grads = run.gradient()
            assert all(np.all(np.isfinite(g)) for g in grads.values())
        finally:
            wk.reset()
