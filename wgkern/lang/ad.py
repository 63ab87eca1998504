"""`wk.ad`: Tape, custom gradients (`grad_replaced`/`grad_for`), `clear_all_gradients`, `grad_check`.

A Tape records the forward launches of the current Program (launch.py appends to `program.tape`) and
replays their `.grad` kernels in reverse order on exit. Reverse kernels themselves come from passes/autodiff;
inside a `FwdMode` block kernels launch their forward-mode variant (passes/autodiff/forward_mode.py)."""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from wgkern.errors import WkError
from wgkern.lang.types import f64


def clear_all_gradients(gradient_type: Any = "adjoint") -> None:
    """Zero every `.grad` container of the current program, or with `gradient_type="dual"` every `.dual` one
    (Taichi's and Quadrants' SNodeGradType.ADJOINT / DUAL are accepted too). A Tape clears the adjoints only, so
    the tangents a FwdMode block left stay."""
    kind = str(getattr(gradient_type, "name", gradient_type)).lower()
    if kind not in ("adjoint", "dual"):
        raise WkError(f"wk.ad.clear_all_gradients(gradient_type=...) is 'adjoint' or 'dual', not {gradient_type!r}")
    from wgkern.runtime.program import current
    program = current()
    if program is None:
        return
    for container in list(program.containers):
        adjoint = container.grad if kind == "adjoint" else container.dual
        if adjoint is not None and not getattr(adjoint, "unplaced_adjoint", False):   # those are still zero
            adjoint.fill(0)


class AdUsageError(WkError, RuntimeError):
    """A custom-gradient decorator used on the wrong kind of function (Taichi raises a RuntimeError)."""


def no_grad(fn: Any) -> Any:
    """`@wk.ad.no_grad` (Taichi's) on a kernel or on a Python function that launches kernels: its `.grad`
    does nothing, so a Tape replay skips it (a function is recorded as one call, like a grad_replaced one)."""
    from wgkern.lang.kernel import Kernel
    if isinstance(fn, Kernel):
        fn.no_grad = True
        return fn
    if not callable(fn):
        raise AdUsageError(f"@wk.ad.no_grad decorates a @wk.kernel or a Python function, not {fn!r}")
    wrapped = grad_replaced(fn)
    wrapped._wk_grad_fn = lambda *args, **kwargs: None  # type: ignore[attr-defined]
    return wrapped


@dataclass(slots=True)
class ReplacedCall:
    """A call of a @wk.ad.grad_replaced function recorded on a Tape: replayed through its @grad_for."""
    primal: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


class Tape:
    """`with wk.ad.Tape(loss=y): ...` records kernel launches; on entry it clears the adjoints (when
    `clear_gradients` and the loss is a field) and sets `loss` to 0, as Taichi's Tape does (kernels accumulating
    into it start afresh, and adjoints the block itself seeds, such as difftaichi's water_renderer writing an
    image's `.grad` from a network, are kept); on exit it seeds `loss.grad = 1` and replays the `.grad` kernels
    in reverse order.
    `grad_check=[x, ...]` (Taichi's) then checks each listed field's gradient against finite differences of the
    recorded launches (`TapeGradChecker`) and raises AssertionError when one disagrees. `validation=True` asks
    for the run-time check of the global data access rule across the launches of the tape, which runs under
    `wk.init(debug=True)` (without it, a warning says so): the forward launches raise wk.KernelAssertionError
    where one overwrites an element the tape read before. (Within one launch, every reverse compile checks the
    rule, validation or not: GlobalAccessRuleError.)"""

    def __init__(self, loss: Any = None, clear_gradients: bool = True, validation: bool = False,
                 grad_check: list[Any] | None = None):
        if loss is not None and getattr(loss, "grad", None) is None:
            raise WkError(f"wk.ad.Tape(loss=...): '{getattr(loss, 'name', loss)}' has no .grad; create it with "
                          "needs_grad=True")
        if loss is not None and getattr(loss, "is_field", True) and getattr(loss, "shape", ()) != ():
            raise WkError(f"wk.ad.Tape(loss=...): '{loss.name}' has shape {loss.shape}; the loss must be a 0-d "
                          "field (wk.field(dtype, shape=())), as in Taichi")
        if loss is not None and not getattr(loss, "is_field", True) and getattr(loss, "size", 1) != 1:
            raise WkError(f"wk.ad.Tape(loss=...): the ndarray '{loss.name}' has shape {loss.shape}; an ndarray loss "
                          "must hold exactly one element (shape () or (1,), as Quadrants allows)")
        if grad_check is not None and not isinstance(grad_check, (list, tuple)):
            raise WkError("wk.ad.Tape(grad_check=...) takes a list of the fields whose gradients to check")
        if grad_check and (loss is None or loss.dtype != f64):
            raise WkError("wk.ad.Tape(grad_check=...) needs an f64 loss (finite differences in f32 are too coarse); "
                          "use wk.init(default_fp=wk.f64) or an f64 loss field")
        self.loss = loss
        self.clear_gradients = clear_gradients
        self.validation = validation
        self.grad_check = list(grad_check or [])
        self.snapshot: TapeGradChecker | None = None
        self.entries: list[Any] = []
        self.program: Any = None

    def __enter__(self) -> Tape:
        from wgkern.runtime.program import get_program
        program = get_program()
        if program.tape is not None:
            raise WkError("wk.ad.Tape blocks cannot be nested")
        self.program = program
        self.entries = []
        if self.validation and not program.options.debug:
            warnings.warn("Debug mode is disabled, autodiff valid check will not work. Please specify "
                          "`wk.init(debug=True)` to enable the check.", stacklevel=2)
        if self.validation and program.options.debug:
            # forward launches mark what they read and fail where they overwrite a marked element
            # (passes/autodiff/access_marks.py); marks left by an earlier tape are cleared
            for mark in program.access_marks.values():
                mark.fill(0)
            program.tape_validation = True
        if self.clear_gradients and self.loss is not None and getattr(self.loss, "is_field", True):
            clear_all_gradients()
        if self.loss is not None:
            self.loss.fill(0)
        if self.grad_check:
            self.snapshot = TapeGradChecker(program, self.loss, self.grad_check)
        program.tape = self.entries
        return self

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> None:
        if self.program is not None and self.program.tape is self.entries:
            self.program.tape = None
        if self.program is not None and self.program.tape_validation:
            self.program.tape_validation = False
            if exc_type is None:
                self.program.sync()         # on GPUs a violation found by the forward launches is raised here
        if exc_type is None:
            self.grad()

    @property
    def calls(self) -> list[tuple[Any, tuple[Any, ...]]]:
        """The recorded launches as Taichi's Tape lists them: (kernel or grad_replaced function, arguments)."""
        return [(entry.primal, entry.args) if isinstance(entry, ReplacedCall) else (entry[0], entry[1])
                for entry in self.entries]

    def grad(self) -> None:
        """Seed and replay (what leaving the `with` block does)."""
        if self.loss is not None:
            self.loss.grad.fill(1)
        for entry in reversed(self.entries):
            if isinstance(entry, ReplacedCall):
                entry.primal.grad(*entry.args, **entry.kwargs)
            else:
                kernel, args, kwargs = entry
                kernel.grad(*args, **kwargs)
        if self.snapshot is not None:
            self.snapshot.check(self.entries)


def _replay_forward(entries: list[Any]) -> None:
    for entry in entries:
        if isinstance(entry, ReplacedCall):
            entry.primal(*entry.args, **entry.kwargs)
        else:
            kernel, args, kwargs = entry
            kernel(*args, **kwargs)


class TapeGradChecker:
    """`Tape(grad_check=[...])`: takes a snapshot of every primal container when the Tape is entered; after the
    reverse pass, for each checked field it compares the autodiff directional derivative along a random tangent
    with central differences of the replayed forward launches, for shrinking steps until one agrees within 1%.
    The containers are restored (and the forward launches replayed) afterwards, so the state is the Tape's."""

    STEPS = 2.0 ** np.arange(-3, -30, -2)

    def __init__(self, program: Any, loss: Any, fields: list[Any]):
        adjoints = {id(a) for c in program.containers for a in (c.grad, c.dual) if a is not None}
        primals = [c for c in program.containers if id(c) not in adjoints and hasattr(c, "to_numpy")]
        self.loss = loss
        self.fields = fields
        self.saved = [(c, c.to_numpy()) for c in primals]

    def restore(self) -> None:
        for container, values in self.saved:
            container.from_numpy(values)

    def loss_after(self, entries: list[Any], field: Any, moved: np.ndarray) -> float:
        self.restore()
        field.from_numpy(moved.astype(field.to_numpy().dtype))
        _replay_forward(entries)
        return float(np.sum(self.loss.to_numpy(dtype=np.float64)))

    def check(self, entries: list[Any]) -> None:
        failures = []
        rng = np.random.default_rng(0)
        for position, field in enumerate(self.fields):
            if field is self.loss:
                continue
            gradient = field.grad.to_numpy(dtype=np.float64)
            base = dict((id(c), v) for c, v in self.saved)[id(field)].astype(np.float64)
            errors = []
            for step in self.STEPS:
                tangent = rng.random(base.shape)
                along_autodiff = float(np.sum(gradient * tangent))
                higher = self.loss_after(entries, field, base + step * tangent)
                lower = self.loss_after(entries, field, base - step * tangent)
                along_numeric = (higher - lower) * 0.5 / step
                error = abs(along_autodiff - along_numeric)
                errors.append(error / (abs(along_autodiff) + 1e-20))
                if error * 100 <= abs(along_autodiff) or (error == 0.0):
                    break
            else:
                failures.append(f"'{getattr(field, 'name', position)}' (relative error {min(errors):.3g})")
        self.restore()
        _replay_forward(entries)
        if failures:
            raise AssertionError("wk.ad.Tape grad_check: autodiff and finite differences disagree (more than 1%) "
                                 "for " + ", ".join(failures))


class FwdMode:
    """`with wk.ad.FwdMode(loss=y, param=x, seed=[...]): ...`: kernels launched inside compute, besides their
    results, the derivative of every value in the direction `seed` of `param` (passes/autodiff/forward_mode.py);
    `y.dual` holds dy/dx . seed afterwards (`loss` may be a list of fields, as in Taichi). On entry the duals are cleared (`clear_gradients`) and `param.dual`
    is set to `seed` (and zeroed again on exit, as in Taichi): one value per element of `param` (None or omitted for a single-element `param`: 1)."""

    def __init__(self, loss: Any = None, param: Any = None, seed: Any = None, clear_gradients: bool = True):
        losses = list(loss) if isinstance(loss, (list, tuple)) else [loss]     # Taichi takes a list of outputs
        if not losses:
            raise WkError("wk.ad.FwdMode(loss=[]): give at least one field with needs_dual=True")
        for role, container in [("loss", c) for c in losses] + [("param", param)]:
            if container is None:
                raise WkError(f"wk.ad.FwdMode needs {role}=<a field with needs_dual=True>")
            if getattr(container, "dual", None) is None:
                raise WkError(f"wk.ad.FwdMode({role}=...): '{getattr(container, 'name', container)}' has no .dual; "
                              "create it with needs_dual=True")
        size = int(np.prod(param.shape, dtype=np.int64)) * int(np.prod(param.element_shape or (1,), dtype=np.int64))
        if seed is None:
            if size != 1:
                raise WkError(f"wk.ad.FwdMode: param '{param.name}' has {size} elements; pass seed=[...] with one "
                              "value per element (the direction of the derivative)")
            seed = [1.0]
        values = np.asarray(seed, dtype=np.float64).reshape(-1)
        if values.size != size:
            raise WkError(f"wk.ad.FwdMode: seed has {values.size} values, param '{param.name}' has {size} elements")
        self.loss = loss
        self.param = param
        self.seed = values
        self.clear_gradients = clear_gradients
        self.program: Any = None

    def __enter__(self) -> FwdMode:
        from wgkern.runtime.program import get_program
        program = get_program()
        if program.fwd_mode is not None:
            raise WkError("wk.ad.FwdMode blocks cannot be nested")
        if self.clear_gradients:
            for container in list(program.containers):
                if container.dual is not None:
                    container.dual.fill(0)
        shape = tuple(self.param.shape) + tuple(self.param.element_shape or ())
        self.param.dual.from_numpy(self.seed.reshape(shape).astype(self.param.dual.dtype.np_dtype))
        self.program = program
        program.fwd_mode = self
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.program is not None and self.program.fwd_mode is self:
            self.program.fwd_mode = None
            losses = self.loss if isinstance(self.loss, (list, tuple)) else [self.loss]
            if all(loss is not self.param for loss in losses):
                self.param.dual.fill(0)     # the seed is taken back on exit, as Taichi's FwdMode does


def grad_replaced(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a Python function that launches kernels: on a Tape it is recorded as one call, whose gradient
    is the function registered with `@wk.ad.grad_for(fn)` (the kernels it launches are not recorded)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from wgkern.runtime.program import current
        program = current()
        if program is None or program.tape is None:
            return fn(*args, **kwargs)
        tape = program.tape
        program.tape = None
        try:
            result = fn(*args, **kwargs)
        finally:
            program.tape = tape
        tape.append(ReplacedCall(wrapper, args, kwargs))
        return result
    def grad(*args: Any, **kwargs: Any) -> Any:
        """`fn.grad(...)`: run the gradient registered with @wk.ad.grad_for(fn), as Taichi's `.grad` does."""
        grad_fn = wrapper._wk_grad_fn  # type: ignore[attr-defined]
        if grad_fn is None:
            raise AdUsageError(f"'{fn.__name__}' is @wk.ad.grad_replaced but no @wk.ad.grad_for function was "
                               "registered for it")
        return grad_fn(*args, **kwargs)

    wrapper._wk_grad_fn = None  # type: ignore[attr-defined]
    wrapper.grad = grad  # type: ignore[attr-defined]
    return wrapper


def grad_for(primal: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register the decorated function as the gradient of `primal` (a @wk.ad.grad_replaced function)."""
    if not hasattr(primal, "_wk_grad_fn"):
        raise AdUsageError(f"@wk.ad.grad_for({getattr(primal, '__name__', primal)}): decorate it with "
                           "@wk.ad.grad_replaced first")

    def register(grad_fn: Callable[..., Any]) -> Callable[..., Any]:
        primal._wk_grad_fn = grad_fn  # type: ignore[attr-defined]
        return grad_fn
    return register


def _loss_value(func: Callable[[], Any], loss: Any) -> float:
    loss.fill(0)
    func()
    return float(np.sum(loss.to_numpy(dtype=np.float64)))


def grad_check(func: Callable[[], Any], inputs: list[Any], loss: Any, eps: float = 1e-3, rtol: float = 1e-2,
               atol: float = 1e-4, max_elements: int = 64) -> float:
    """Compare the Tape gradient of `loss` with respect to each container in `inputs` against central finite
    differences. `func()` launches the forward kernels (loss is zeroed before each call). At most
    `max_elements` elements per input are probed (evenly spaced). Raises AssertionError naming the first
    mismatch; returns the largest absolute difference."""
    with Tape(loss=loss):
        loss.fill(0)
        func()
    analytic = [x.grad.to_numpy(dtype=np.float64) for x in inputs]
    worst = 0.0
    for x, grad in zip(inputs, analytic):
        base = x.to_numpy()
        flat = base.reshape(-1)
        probes = np.unique(np.linspace(0, flat.size - 1, min(flat.size, max_elements)).astype(np.int64))
        for index in probes:
            values = []
            for sign in (1.0, -1.0):
                moved = flat.copy()
                moved[index] = moved[index] + sign * eps
                x.from_numpy(moved.reshape(base.shape))
                values.append(_loss_value(func, loss))
            numeric = (values[0] - values[1]) / (2 * eps)
            exact = grad.reshape(-1)[index]
            error = abs(numeric - exact)
            worst = max(worst, error)
            if error > atol + rtol * abs(numeric):
                x.from_numpy(base)
                raise AssertionError(f"grad_check: d loss / d {x.name}[{np.unravel_index(index, base.shape)}] is "
                                     f"{exact:.6g} by autodiff but {numeric:.6g} by finite differences")
        x.from_numpy(base)
    return worst
