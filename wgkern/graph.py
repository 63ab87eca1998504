"""Taichi's compute graphs (`ti.graph`): `GraphBuilder().dispatch(kernel, *args)` records kernel launches whose
arguments may be symbolic `Arg`s, `compile()` checks the recording, and `Graph.run({name: value})` replays it,
each `Arg` replaced by the value of its name.

wgkern launches are already batched into one submission per sync, so a graph is its list of launches: running
it costs what calling the kernels does. An argument's declared kind, dtype and ndim (a texture's dimensions,
format and channels) are checked against the values given to `run`."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from wgkern.errors import ArgumentError, WkError
from wgkern.lang.graph_regions import parallel, parallel_context  # noqa: F401 - Quadrants' qd.graph namespace
from wgkern.lang.math import graph_do_while as do_while  # noqa: F401 - Quadrants' qd.graph.do_while


class ArgKind(enum.Enum):
    SCALAR = 0
    NDARRAY = 1
    MATRIX = 2
    TEXTURE = 3
    RWTEXTURE = 4


@dataclass(frozen=True)
class _Arg:
    tag: ArgKind
    name: str
    dtype: Any = None
    ndim: int | None = None
    element_shape: tuple[int, ...] = ()
    texture_shape: tuple[int, ...] = ()          # textures (older spelling): the shape, its length the dimensions
    num_channels: int | None = None
    fmt: Any = None                              # textures: wk.Format

    def check(self, value: Any) -> None:
        """The value given to run() for this argument suits its declaration."""
        if self.tag is ArgKind.SCALAR:
            if not isinstance(value, (int, float)) and getattr(value, "shape", None) not in ((),):
                raise ArgumentError(f"graph argument '{self.name}' is a scalar, got {type(value).__name__}")
        elif self.tag is ArgKind.NDARRAY:
            shape = getattr(value, "shape", None)
            if shape is None or getattr(value, "is_field", False):
                raise ArgumentError(f"graph argument '{self.name}' is an ndarray, got {type(value).__name__}")
            if self.ndim is not None and len(shape) != self.ndim:
                raise ArgumentError(f"graph argument '{self.name}' has ndim {self.ndim}, got an ndarray of shape "
                                    f"{tuple(shape)}")
        elif self.tag in (ArgKind.TEXTURE, ArgKind.RWTEXTURE):
            from wgkern.lang.texture import Texture
            if not isinstance(value, Texture):
                raise ArgumentError(f"graph argument '{self.name}' is a texture, got {type(value).__name__}")
            dims = self.ndim if self.ndim is not None else len(self.texture_shape) or None
            if dims is not None and dims != value.num_dims:
                raise ArgumentError(f"graph argument '{self.name}' is a {dims}-D texture, got {value!r}")
            if self.fmt is not None and self.fmt is not value.fmt:
                raise ArgumentError(f"graph argument '{self.name}' has format {self.fmt.name}, got {value!r}")
            if self.num_channels is not None and self.num_channels != value.num_channels:
                raise ArgumentError(f"graph argument '{self.name}' has {self.num_channels} channel(s), got "
                                    f"{value!r}")


_POSITIONAL = ("tag", "name", "dtype", "ndim", "field_dim", "element_shape", "channel_format", "shape",
               "num_channels")


def Arg(*args: Any, **kwargs: Any) -> _Arg:  # noqa: N802 - Taichi's name
    """`Arg(ArgKind.NDARRAY, "x", dtype=vec2, ndim=1)`: a symbolic graph argument named `name`."""
    if len(args) > len(_POSITIONAL):
        raise WkError(f"graph.Arg() takes at most {len(_POSITIONAL)} positional arguments")
    kwargs.update(zip(_POSITIONAL, args))
    tag, name = kwargs.get("tag"), kwargs.get("name")
    if not isinstance(tag, ArgKind) or not isinstance(name, str):
        raise WkError("graph.Arg(kind, name, ...) takes an ArgKind and a name")
    element_shape = tuple(kwargs.get("element_shape") or ())
    texture_shape = tuple(kwargs.get("shape") or ())
    return _Arg(tag, name, kwargs.get("dtype"), kwargs.get("ndim"), element_shape, texture_shape,
                kwargs.get("num_channels"), kwargs.get("fmt"))


@dataclass
class Sequential:
    """An ordered list of dispatches (and nested sequences) in a graph."""
    steps: list[Any] = field(default_factory=list)

    def dispatch(self, kernel: Any, *args: Any) -> None:
        if not callable(kernel) or not hasattr(kernel, "fn"):
            raise WkError(f"graph dispatch() takes a @wk.kernel, got {kernel!r}")
        self.steps.append((kernel, args))

    def append(self, node: Sequential) -> None:
        if not isinstance(node, Sequential):
            raise WkError("graph append() takes a sequence made by create_sequential()")
        self.steps.append(node)

    def launches(self) -> list[tuple[Any, tuple[Any, ...]]]:
        out: list[tuple[Any, tuple[Any, ...]]] = []
        for step in self.steps:
            out.extend(step.launches() if isinstance(step, Sequential) else [step])
        return out


class GraphBuilder:
    """Records dispatches; `compile()` gives the Graph to `run`."""

    def __init__(self) -> None:
        self._root = Sequential()

    def dispatch(self, kernel: Any, *args: Any) -> None:
        self._root.dispatch(kernel, *args)

    def create_sequential(self) -> Sequential:
        return Sequential()

    def append(self, node: Sequential) -> None:
        self._root.append(node)

    def compile(self) -> Graph:
        return Graph(self._root.launches())


class Graph:
    """A compiled graph: `run({"x": x, ...})` launches its kernels in order."""

    def __init__(self, launches: list[tuple[Any, tuple[Any, ...]]]):
        self._launches = launches
        symbols: dict[str, _Arg] = {}
        for kernel, args in launches:
            for arg in args:
                if isinstance(arg, _Arg):
                    if arg.name in symbols and symbols[arg.name] != arg:
                        raise WkError(f"graph argument '{arg.name}' is declared twice, differently")
                    symbols[arg.name] = arg
        self.args = symbols

    def run(self, args: dict[str, Any]) -> None:
        missing = [name for name in self.args if name not in args]
        if missing:
            raise ArgumentError(f"Graph.run() needs the argument(s) {', '.join(missing)}")
        for name, symbol in self.args.items():
            symbol.check(args[name])
        for kernel, kernel_args in self._launches:
            kernel(*[args[a.name] if isinstance(a, _Arg) else a for a in kernel_args])
