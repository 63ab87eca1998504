"""Taichi's matrix-free Krylov solvers: `LinearOperator`, `MatrixFreeCG` and `MatrixFreeBICGSTAB`.

The operator is the user's kernel `matvec(v, Av)`; the unknown `x` and the right-hand side `b` are fields of any
shape (scalars, vectors or matrices; f32 or f64), and `x` (the initial guess) is updated in place. Every vector
operation and every scalar of the iteration runs on the device as a wgkern kernel (the dot products and the
workspace live in vector_ops.py), so the solvers run on every backend; the host reads the solver's state only
every few iterations (each iteration, with quiet=False) to decide whether to stop. After the stopping iteration
the device skips its updates, so x is the iterate of the first iteration that met the tolerance, as in Taichi."""
from __future__ import annotations

import math
import numbers
from typing import Any, Callable

from wgkern.errors import ArgumentError, LinalgError
from wgkern.lang import math as wm
from wgkern.lang.fields import Field
from wgkern.lang.kernel import func, kernel
from wgkern.lang.types import f32, f64, template
from wgkern.linalg.vector_ops import (ALPHA, BETA, BROKE_DOWN, CONVERGED, DOT_A, DOT_B, ITERATIONS, OMEGA, RHO,
                                      RHO_OLD, RR, RR_NEW, RUNNING, STATUS, TOL, Workspace, block_dot,
                                      sum_partials, workspace)

MAX_CHECK_INTERVAL = 16     # iterations launched between two reads of the solver state (quiet=True)


class LinearOperator:
    """Taichi's `ti.linalg.LinearOperator(matvec_kernel)`: the matrix A of a matrix-free solve, given as a
    kernel (or any callable) `matvec(v, Av)` that writes A v into Av."""

    def __init__(self, matvec_kernel: Callable[[Any, Any], Any]):
        if not callable(matvec_kernel):
            raise ArgumentError("LinearOperator(matvec_kernel) needs a callable matvec(x, Ax) (usually a "
                                f"@kernel writing A x into Ax), got {type(matvec_kernel).__name__}")
        self._matvec = matvec_kernel

    def matvec(self, x: Any, Ax: Any) -> None:  # noqa: N803 - Taichi's parameter name
        """Ax = A x."""
        if x.shape != Ax.shape:
            raise LinalgError(f"Dimension mismatch x.shape{tuple(x.shape)} != Ax.shape{tuple(Ax.shape)}.")
        self._matvec(x, Ax)


# ---- scalar steps shared by both solvers (one-thread tasks between the parallel loops) ------------------------

@func
def settle(s, state):
    """Judge the new residual s[RR_NEW]: stop on convergence (|r| < tol) or on a non-finite residual."""
    rr = s[RR_NEW]
    if wm.isnan(rr) or wm.isinf(rr):
        state[STATUS] = BROKE_DOWN
    elif rr == 0 or wm.sqrt(rr) < s[TOL]:
        state[STATUS] = CONVERGED


@func
def divide_or_stop(numerator, denominator, s, state, slot):
    """s[slot] = numerator / denominator; a zero denominator (the method broke down, or the iterate is so close
    to the solution that its products underflow) stops the solve before x is updated: converged if |r| < tol."""
    if denominator == 0:
        state[STATUS] = BROKE_DOWN
        if s[RR] == 0 or wm.sqrt(s[RR]) < s[TOL]:
            state[STATUS] = CONVERGED
    else:
        s[slot] = numerator / denominator


# ---- conjugate gradient ---------------------------------------------------------------------------------------

@kernel
def _cg_start(b: template(), ax: template(), r: template(), p: template(), partials: template(), s: template(),
              state: template(), layout: template()):
    state[STATUS] = RUNNING
    state[ITERATIONS] = 0
    for index in wm.grouped(r):
        r[index] = b[index] - ax[index]
        p[index] = r[index]
    for block in range(layout[4]):
        partials[block] = block_dot(r, r, block, layout)
    if state[STATUS] == RUNNING:
        s[RR_NEW] = sum_partials(partials, 0, layout)
        s[RR] = s[RR_NEW]
        settle(s, state)


@kernel
def _cg_step(x: template(), r: template(), p: template(), ap: template(), partials: template(), s: template(),
             state: template(), layout: template()):
    """One CG iteration after ap = A p: x += alpha p, r -= alpha A p, p = r + beta p."""
    for block in range(layout[4]):
        if state[STATUS] == RUNNING:
            partials[block] = block_dot(p, ap, block, layout)
    if state[STATUS] == RUNNING:
        divide_or_stop(s[RR], sum_partials(partials, 0, layout), s, state, ALPHA)
    for index in wm.grouped(r):
        if state[STATUS] == RUNNING:
            x[index] += s[ALPHA] * p[index]
            r[index] -= s[ALPHA] * ap[index]
    for block in range(layout[4]):
        if state[STATUS] == RUNNING:
            partials[block] = block_dot(r, r, block, layout)
    if state[STATUS] == RUNNING:
        state[ITERATIONS] += 1
        s[RR_NEW] = sum_partials(partials, 0, layout)
        settle(s, state)
        s[BETA] = s[RR_NEW] / s[RR]
        s[RR] = s[RR_NEW]
    for index in wm.grouped(p):
        if state[STATUS] == RUNNING:
            p[index] = r[index] + s[BETA] * p[index]


# ---- BiCGSTAB -------------------------------------------------------------------------------------------------

@kernel
def _bicgstab_start(b: template(), ax: template(), r: template(), r0: template(), p: template(),
                    ap: template(), partials: template(), s: template(), state: template(), layout: template()):
    state[STATUS] = RUNNING
    state[ITERATIONS] = 0
    for index in wm.grouped(r):
        r[index] = b[index] - ax[index]
        r0[index] = r[index]
        p[index] = r[index] * 0
        ap[index] = r[index] * 0
    for block in range(layout[4]):
        partials[block] = block_dot(r, r, block, layout)
    if state[STATUS] == RUNNING:
        s[RR_NEW] = sum_partials(partials, 0, layout)
        s[RR] = s[RR_NEW]
        settle(s, state)
        s[RHO_OLD] = wm.cast(1, s.dtype)
        s[ALPHA] = wm.cast(1, s.dtype)
        s[OMEGA] = wm.cast(1, s.dtype)


@kernel
def _bicgstab_direction(r: template(), r0: template(), p: template(), ap: template(), partials: template(),
                        s: template(), state: template(), layout: template()):
    """rho = r . r0 (zero: breakdown), then p = r + beta (p - omega A p)."""
    for block in range(layout[4]):
        if state[STATUS] == RUNNING:
            partials[block] = block_dot(r, r0, block, layout)
    if state[STATUS] == RUNNING:
        s[RHO] = sum_partials(partials, 0, layout)
        if s[RHO] == 0:
            state[STATUS] = BROKE_DOWN
        elif state[ITERATIONS] == 0:
            s[BETA] = wm.cast(0, s.dtype)
        else:
            divide_or_stop(s[ALPHA], s[OMEGA], s, state, BETA)
            s[BETA] = (s[RHO] / s[RHO_OLD]) * s[BETA]
    for index in wm.grouped(p):
        if state[STATUS] == RUNNING:
            p[index] = r[index] + s[BETA] * (p[index] - s[OMEGA] * ap[index])


@kernel
def _bicgstab_half(r: template(), r0: template(), ap: template(), half: template(), partials: template(),
                   s: template(), state: template(), layout: template()):
    """After ap = A p: alpha = rho / (r0 . A p), half = r - alpha A p."""
    for block in range(layout[4]):
        if state[STATUS] == RUNNING:
            partials[block] = block_dot(r0, ap, block, layout)
    if state[STATUS] == RUNNING:
        divide_or_stop(s[RHO], sum_partials(partials, 0, layout), s, state, ALPHA)
    for index in wm.grouped(half):
        if state[STATUS] == RUNNING:
            half[index] = r[index] - s[ALPHA] * ap[index]


@kernel
def _bicgstab_finish(x: template(), r: template(), p: template(), half: template(), t: template(),
                     partials: template(), s: template(), state: template(), layout: template()):
    """After t = A half: omega = (t . half) / (t . t), x += alpha p + omega half, r = half - omega t."""
    for block in range(layout[4]):
        if state[STATUS] == RUNNING:
            partials[block] = block_dot(t, half, block, layout)
            partials[layout[4] + block] = block_dot(t, t, block, layout)
    if state[STATUS] == RUNNING:
        s[DOT_A] = sum_partials(partials, 0, layout)
        s[DOT_B] = sum_partials(partials, 1, layout)
        if s[DOT_B] == 0:       # t = 0: Taichi's guard against 0 / 0
            s[OMEGA] = s[DOT_A] / (s[DOT_B] + wm.cast(1e-16, s.dtype))
        else:
            s[OMEGA] = s[DOT_A] / s[DOT_B]
    for index in wm.grouped(x):
        if state[STATUS] == RUNNING:
            x[index] += s[ALPHA] * p[index] + s[OMEGA] * half[index]
            r[index] = half[index] - s[OMEGA] * t[index]
    for block in range(layout[4]):
        if state[STATUS] == RUNNING:
            partials[block] = block_dot(r, r, block, layout)
    if state[STATUS] == RUNNING:
        state[ITERATIONS] += 1
        s[RR_NEW] = sum_partials(partials, 0, layout)
        settle(s, state)
        s[RR] = s[RR_NEW]
        s[RHO_OLD] = s[RHO]


# ---- the host side --------------------------------------------------------------------------------------------

def _operator(A: Any, solver: str) -> Callable[[Any, Any], Any]:  # noqa: N803 - Taichi's parameter name
    if isinstance(A, LinearOperator):
        return A._matvec
    if callable(A):
        return A
    raise ArgumentError(f"{solver}: A must be a wk.linalg.LinearOperator (or a callable matvec(x, Ax)), "
                        f"got {type(A).__name__}")


def _check_system(b: Any, x: Any, tol: float, maxiter: int, solver: str) -> None:
    for name, value in (("b", b), ("x", x)):
        if not isinstance(value, Field):
            raise ArgumentError(f"{solver}: {name} must be a field (wk.field / wk.Vector.field / "
                                f"wk.Matrix.field), got {type(value).__name__}")
    if b.dtype != x.dtype:
        raise ArgumentError(f"Dtype mismatch b.dtype({b.dtype}) != x.dtype({x.dtype}).")
    if b.dtype not in (f32, f64):
        raise ArgumentError(f"Not supported dtype: {b.dtype} ({solver} solves in f32 or f64)")
    if b.shape != x.shape or b.element_shape != x.element_shape:
        raise LinalgError(f"Dimension mismatch b.shape{tuple(b.shape) + tuple(b.element_shape)} != "
                          f"x.shape{tuple(x.shape) + tuple(x.element_shape)}.")
    if tuple(b.offset or ()) != tuple(x.offset or ()):
        raise LinalgError(f"{solver}: b and x must have the same index offset, got {b.offset} and {x.offset}")
    if not x.shape:
        raise LinalgError(f"{solver}: x must have at least one axis, got a 0-d field")
    if not (isinstance(tol, numbers.Real) and tol >= 0):
        raise LinalgError(f"{solver}: tol must be a number >= 0, got {tol!r}")
    if not (isinstance(maxiter, numbers.Integral) and maxiter >= 0):
        raise LinalgError(f"{solver}: maxiter must be an integer >= 0, got {maxiter!r}")


class _Iteration:
    """Runs `step` (one device iteration) until the device says the solve stopped or `maxiter` steps ran,
    reading the state every 1, 2, 4, ... MAX_CHECK_INTERVAL steps (every step when `verbose`)."""

    def __init__(self, space: Workspace, maxiter: int, verbose: bool):
        self.space = space
        self.maxiter = maxiter
        self.verbose = verbose

    def status(self) -> int:
        return int(self.space.state[STATUS])

    def residual(self) -> float:
        return math.sqrt(max(float(self.space.s[RR]), 0.0))

    def run(self, step: Callable[[], None], report: Callable[[int], None]) -> None:
        launched = 0
        interval = 1
        while launched < self.maxiter and self.status() == RUNNING:
            count = 1 if self.verbose else min(interval, self.maxiter - launched)
            for _ in range(count):
                step()
            launched += count
            interval = min(2 * interval, MAX_CHECK_INTERVAL)
            if self.verbose:
                report(launched)


def _prepare(A: Any, b: Any, x: Any, tol: float, maxiter: int, solver: str,  # noqa: N803
             names: tuple[str, ...]) -> tuple[Callable[[Any, Any], Any], Workspace]:
    matvec = _operator(A, solver)
    _check_system(b, x, tol, maxiter, solver)
    space = workspace(x, names)
    space.s[TOL] = float(tol)
    return matvec, space


def MatrixFreeCG(A: Any, b: Field, x: Field, tol: float = 1e-6, maxiter: int = 5000,  # noqa: N802, N803
                 quiet: bool = True) -> bool:
    """Taichi's `ti.linalg.MatrixFreeCG`: solve A x = b for a symmetric positive-definite LinearOperator A by
    conjugate gradients, starting from x and updating it in place. Stops when |b - A x| < tol (absolute, the
    2-norm over all elements) or after `maxiter` iterations; returns True when it converged. quiet=False prints
    the residual of every iteration."""
    matvec, space = _prepare(A, b, x, tol, maxiter, "MatrixFreeCG", ("r", "p", "Ap", "Ax"))
    maxiter = int(maxiter)
    r, p, ap, ax = (space.vectors[name] for name in ("r", "p", "Ap", "Ax"))
    layout = space.layout.as_template()
    matvec(x, ax)
    _cg_start(b, ax, r, p, space.partials, space.s, space.state, layout)
    iteration = _Iteration(space, maxiter, not quiet)
    if not quiet:
        print(f">>> Initial residual = {float(space.s[RR]):e}")

    def step() -> None:
        matvec(p, ap)
        _cg_step(x, r, p, ap, space.partials, space.s, space.state, layout)

    def report(done: int) -> None:
        if iteration.status() == RUNNING:
            print(f">>> Iter = {done:4}, Residual = {iteration.residual():e}")
        elif iteration.status() == CONVERGED:
            print(">>> Conjugate Gradient method converged.")
            print(f">>> #iterations {int(space.state[ITERATIONS])}")

    iteration.run(step, report)
    converged = iteration.status() == CONVERGED
    if not converged and not quiet:
        print(f">>> Conjugate Gradient method failed to converge in {maxiter} iterations: "
              f"Residual = {iteration.residual():e}")
    return converged


def MatrixFreeBICGSTAB(A: Any, b: Field, x: Field, tol: float = 1e-6, maxiter: int = 5000,  # noqa: N802, N803
                       quiet: bool = True) -> bool:
    """Taichi's `ti.linalg.MatrixFreeBICGSTAB`: solve A x = b for a general (non-symmetric) LinearOperator A by
    BiCGSTAB (shadow residual: the initial residual), starting from x and updating it in place. Stops when
    |b - A x| < tol, when r . r_shadow becomes 0 (breakdown) or after `maxiter` iterations; returns True when
    it converged."""
    names = ("r", "r0", "p", "Ap", "half", "t", "Ax")
    matvec, space = _prepare(A, b, x, tol, maxiter, "MatrixFreeBICGSTAB", names)
    maxiter = int(maxiter)
    r, r0, p, ap, half, t, ax = (space.vectors[name] for name in names)
    layout = space.layout.as_template()
    matvec(x, ax)
    _bicgstab_start(b, ax, r, r0, p, ap, space.partials, space.s, space.state, layout)
    iteration = _Iteration(space, maxiter, not quiet)
    if not quiet:
        print(f">>> Initial residual = {float(space.s[RR]):e}")

    def step() -> None:
        _bicgstab_direction(r, r0, p, ap, space.partials, space.s, space.state, layout)
        matvec(p, ap)
        _bicgstab_half(r, r0, ap, half, space.partials, space.s, space.state, layout)
        matvec(half, t)
        _bicgstab_finish(x, r, p, half, t, space.partials, space.s, space.state, layout)

    def report(done: int) -> None:
        status = iteration.status()
        if status == BROKE_DOWN and float(space.s[RHO]) == 0:
            print(">>> BICGSTAB failed because r@r_tld = 0.")
            return
        print(f">>> Iter = {done:4}, Residual = {iteration.residual():e}")
        if status == CONVERGED:
            print(f">>> BICGSTAB method converged at #iterations {int(space.state[ITERATIONS])}")

    iteration.run(step, report)
    converged = iteration.status() == CONVERGED
    if not converged and not quiet:
        print(f">>> BICGSTAB failed to converge in {maxiter} iterations: Residual = {iteration.residual():e}")
    return converged


__all__ = ["LinearOperator", "MatrixFreeBICGSTAB", "MatrixFreeCG"]
