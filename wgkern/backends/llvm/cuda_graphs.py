"""CUDA graphs: kernels with host loops run as one graph, the loops on the device (LoopGraph); kernels of several
tasks launched again with the same arguments run as one graph launch (RepeatGraph).

Kernels with host loops (Quadrants' `while wk.graph_do_while(c):`):

Without this, runtime/host_loops.py launches a loop body's tasks and reads the 0-d counter back after every trip:
one wait per trip. Here the kernel's whole schedule becomes one graph: a piece's tasks are kernel nodes (the same
functions, grids and argument blocks a launch would pass), and a loop is a conditional WHILE node whose body
graph holds the body's nodes followed by a one-thread kernel that reads the counter and sets the node's condition
(`cudaGraphSetConditional`, CUDA 12.4 drivers and later). A one-thread kernel before the WHILE node sets the
condition to 1, so the body runs at least once, also when the loop is nested in another loop's body.

The graph is instantiated on the first launch and launched again as long as every piece packs the same argument
block (but for the launch id, where no task draws random numbers) and sizes the same grids (containers, shapes
and scalars unchanged); otherwise it is built anew. Kernels whose pieces have adstacks, prints or debug checks
(work the host does around each launch), and drivers without conditional nodes or refusing the first graph, keep
the host loop. `WK_CUDA_GRAPH_LOOPS=0` keeps it too (for comparisons).

Kernels of several tasks: the same graph of kernel nodes without loops, built once the same arguments were passed
a few launches in a row (RepeatGraph says when); a launch with other arguments launches the tasks one by one, as
kernels of one task, with adstacks, prints or debug checks always do. `WK_CUDA_GRAPHS=0` launches per task."""
from __future__ import annotations

import ctypes
import os
from typing import Any, Sequence

import numpy as np

from wgkern.backends.base import LaunchArgs, LoopStep
from wgkern.ir import nodes as ir
from wgkern.ir.visitor import walk

from .cuda_driver import CudaError
from .layout import LAUNCH_ID_OFFSET

_P, _vp, _u, _u64, _size = ctypes.POINTER, ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint64, ctypes.c_size_t

_NODE_KERNEL, _NODE_CONDITIONAL = 0, 13          # CUgraphNodeType
_CONDITIONAL_WHILE = 1                           # CUgraphConditionalNodeType


class _KernelNodeParams(ctypes.Structure):
    """CUDA_KERNEL_NODE_PARAMS_v3 (the kernel member of CUgraphNodeParams)."""
    _fields_ = [("func", _vp), ("grid", _u * 3), ("block", _u * 3), ("shared_bytes", _u),
                ("kernel_params", _vp), ("extra", _vp), ("kern", _vp), ("ctx", _vp)]


class _ConditionalNodeParams(ctypes.Structure):
    """CUDA_CONDITIONAL_NODE_PARAMS."""
    _fields_ = [("handle", _u64), ("type", ctypes.c_int), ("size", _u), ("graphs_out", _P(_vp)), ("ctx", _vp)]


class _NodeUnion(ctypes.Union):
    _fields_ = [("reserved", ctypes.c_longlong * 29), ("kernel", _KernelNodeParams),
                ("conditional", _ConditionalNodeParams)]


class _NodeParams(ctypes.Structure):
    """CUgraphNodeParams: the node's type, then its parameters."""
    _fields_ = [("type", ctypes.c_int), ("reserved0", ctypes.c_int * 3), ("params", _NodeUnion),
                ("reserved2", ctypes.c_longlong)]


_SIGNATURES: dict[str, list[Any]] = {
    "cuGraphCreate": [_P(_vp), _u],
    "cuGraphDestroy": [_vp],
    "cuGraphAddNode": [_P(_vp), _vp, _P(_vp), _size, _P(_NodeParams)],
    "cuGraphConditionalHandleCreate": [_P(_u64), _vp, _vp, _u, _u],
    "cuGraphInstantiateWithFlags": [_P(_vp), _vp, ctypes.c_ulonglong],
    "cuGraphLaunch": [_vp, _vp],
    "cuGraphExecDestroy": [_vp],
}

# The condition setters: a counter (a 0-d integer container, frontend-checked) continues the loop when any bit of
# its storage is set. Storage itemsize -> (load type, register type).
_COUNTER_LOADS = {1: ("u8", "u32"), 2: ("u16", "u32"), 4: ("u32", "u32"), 8: ("u64", "u64")}


def _setter_ptx() -> str:
    """`wk_loop_enter(handle)` sets the condition to 1; `wk_loop_again_T(counter, handle)` to counter != 0."""
    call = ("    st.param.b64 [handle_arg], %rd2;\n    st.param.b32 [value_arg], %r9;\n"
            "    call.uni cudaGraphSetConditional, (handle_arg, value_arg);\n    ret;\n}\n")
    head = (".version 6.0\n.target sm_50\n.address_size 64\n"
            ".extern .func cudaGraphSetConditional(.param .b64 handle, .param .b32 value);\n")
    text = [head, ".visible .entry wk_loop_enter(.param .u64 handle)\n{\n    .reg .b32 %r9;\n    .reg .b64 %rd2;\n"
                  "    .param .b64 handle_arg;\n    .param .b32 value_arg;\n    ld.param.u64 %rd2, [handle];\n"
                  "    mov.u32 %r9, 1;\n" + call]
    for load, register in _COUNTER_LOADS.values():
        text.append(f".visible .entry wk_loop_again_{load}(.param .u64 counter, .param .u64 handle)\n{{\n"
                    f"    .reg .pred %p1;\n    .reg .{register} %v1;\n    .reg .b32 %r9;\n    .reg .b64 %rd<3>;\n"
                    "    .param .b64 handle_arg;\n    .param .b32 value_arg;\n"
                    "    ld.param.u64 %rd1, [counter];\n    ld.param.u64 %rd2, [handle];\n"
                    f"    ld.global.{load} %v1, [%rd1];\n    setp.ne.{register} %p1, %v1, 0;\n"
                    "    selp.u32 %r9, 1, 0, %p1;\n" + call)
    return "".join(text)


class GraphApi:
    """The driver's graph calls (typed) and the setter kernels, for one CUDA Driver; `missing` says why graphs
    with conditional nodes cannot be used ('' when they can)."""

    def __init__(self, driver: Any):
        self.driver = driver
        self.missing = ""
        lib = driver.lib
        for name, argtypes in _SIGNATURES.items():
            function = getattr(lib, name, None)
            if function is None:
                self.missing = f"the CUDA driver has no {name} (conditional graph nodes need a CUDA 12.4 driver)"
                return
            function.argtypes = argtypes
            function.restype = ctypes.c_int
        self.lib = lib
        try:
            module = driver.load_module(_setter_ptx())
        except Exception as exc:  # noqa: BLE001 - a driver that cannot link cudaGraphSetConditional has no graphs
            self.missing = f"the CUDA driver could not load the loop condition kernels: {exc}"
            return
        self.enter = driver.function(module, "wk_loop_enter")
        self.again = {size: driver.function(module, f"wk_loop_again_{load}")
                      for size, (load, _) in _COUNTER_LOADS.items()}


def graph_api(driver: Any) -> GraphApi:
    """The driver's GraphApi, made on first use."""
    api = getattr(driver, "graph_api", None)
    if api is None:
        api = driver.graph_api = GraphApi(driver)
    return api


def loop_graph(backend: Any, schedule: Sequence[Any]) -> "LoopGraph | None":
    """A LoopGraph running `schedule` (CudaCompiledKernel pieces and LoopSteps), or None where the host must
    run the loops (module docstring)."""
    if os.environ.get("WK_CUDA_GRAPH_LOOPS", "1") == "0":
        return None
    if any(p.has_stacks or p.has_prints or p.error_word is not None for p in _pieces(schedule)):
        return None
    api = graph_api(backend.driver)
    if api.missing:
        return None
    return LoopGraph(backend, api, schedule)


def repeat_graph(compiled: Any) -> "RepeatGraph | None":
    """A RepeatGraph for CudaCompiledKernel `compiled`, or None where its launches stay per task: a single task,
    adstacks, prints or debug checks (host work around each launch), or `WK_CUDA_GRAPHS=0`."""
    if os.environ.get("WK_CUDA_GRAPHS", "1") == "0" or len(compiled.tasks) < 2:
        return None
    if compiled.has_stacks or compiled.has_prints or compiled.error_word is not None:
        return None
    return RepeatGraph(compiled)


class RepeatGraph:
    """A kernel of several tasks launched again and again with the same arguments, as one CUDA graph: one
    cuGraphLaunch instead of a cuLaunchKernel per task (programs such as Genesis launch kernels of a dozen tasks
    with unchanged arguments every step).

    `launch(block, grids)` is called with each launch's argument block and grids. The graph is built at the
    `REPEATS`-th launch in a row with the same ones (the launch id aside, as LoopGraph keys), launched while they
    stay the same, and left (the tasks launched one by one) when they change; it is built again only once they
    repeat again, and never more often than one build per `LAUNCHES_PER_BUILD` graph launches after the first
    few builds, so arguments that keep changing cost no more than a comparison per launch."""

    REPEATS = 3
    FREE_BUILDS = 4
    LAUNCHES_PER_BUILD = 8

    def __init__(self, compiled: Any):
        self.compiled = compiled
        self.random = _draws_random_numbers([compiled])
        self.graph: LoopGraph | None = None       # made on the first build (it loads the graph calls)
        self.seen: tuple | None = None
        self.repeats = 0
        self.unsupported = False                  # the driver has no graphs: launches stay per task

    def launch(self, block: bytes, grids: tuple) -> bool:
        """Run the launch as the graph (True), or leave it to the caller (False, nothing run)."""
        if self.unsupported:
            return False
        graph = self.graph
        key = ((_block_key(block, self.random), grids),), ()
        if graph is not None and key == graph.key:
            return graph.launch_keyed(key, {id(self.compiled): (block, grids)}, None)
        if key != self.seen:
            self.seen, self.repeats = key, 1
            return False
        self.repeats += 1
        if self.repeats < self.REPEATS:
            return False
        if graph is None:
            api = graph_api(self.compiled.backend.driver)
            if api.missing:
                self.unsupported = True
                return False
            graph = self.graph = LoopGraph(self.compiled.backend, api, [self.compiled])
        if graph.refused or (graph.builds >= self.FREE_BUILDS
                             and graph.launches < self.LAUNCHES_PER_BUILD * graph.builds):
            return False
        return graph.launch_keyed(key, {id(self.compiled): (block, grids)}, None)


def _draws_random_numbers(pieces: Sequence[Any]) -> bool:
    return any(isinstance(stmt, ir.RandomValue) for piece in pieces for task in piece.kernel.tasks
               for stmt in walk(task.body))


def _block_key(block: bytes, random: bool) -> bytes:
    """What of an argument block a graph depends on: all of it but the launch id (header word), which differs
    every launch and which only kernels drawing random numbers read."""
    return block if random else block[:LAUNCH_ID_OFFSET] + block[LAUNCH_ID_OFFSET + 4:]


def _pieces(steps: Sequence[Any]):
    for step in steps:
        if isinstance(step, LoopStep):
            yield from _pieces(step.body)
        else:
            yield step


class LoopGraph:
    """One kernel's schedule as an instantiated CUDA graph, kept while its launches pass the same arguments."""

    def __init__(self, backend: Any, api: GraphApi, schedule: Sequence[Any]):
        self.backend = backend
        self.api = api
        self.schedule = schedule
        self.pieces = list(_pieces(schedule))
        self.counter_slots = [loop.counter for loop in _loops(schedule)]
        self.key: tuple | None = None
        self.random = _draws_random_numbers(self.pieces)
        self.graph = _vp()
        self.exec = _vp()
        self.keep: list[Any] = []         # what the nodes' parameters point to, alive while the graph is
        self.builds = 0
        self.launches = 0
        self.refused = ""

    def launch(self, args: LaunchArgs) -> bool:
        """Launch the graph (built first where the arguments changed); False, running nothing, where the
        driver refused the first graph built (`refused` says why), as it does from then on."""
        if self.refused:
            return False
        backend = self.backend
        backend.driver.bind()
        packed = [(piece, *piece.launch_block(args)) for piece in self.pieces]
        counters = tuple(backend.device_address(args.buffers[slot]) for slot in self.counter_slots)
        key = (tuple((_block_key(block, self.random), blocks) for _, block, blocks in packed), counters)
        return self.launch_keyed(key, {id(piece): (block, blocks) for piece, block, blocks in packed}, args)

    def launch_keyed(self, key: tuple, packed: dict[int, tuple[bytes, tuple]], args: LaunchArgs | None) -> bool:
        """`launch` once the arguments are packed: `key` says what the graph depends on, `packed` maps each
        piece (by id) to its argument block and grids; `args` gives the loop counters' buffers (None: no loops)."""
        if key != self.key:
            try:
                self._build(packed, args)
            except CudaError as exc:
                self.release()
                if self.builds:
                    raise
                self.refused = str(exc)        # the driver takes no such graph here: the host launches instead
                return False
            self.key = key
        self.backend.start_timer()
        self.api.driver.check(self.api.lib.cuGraphLaunch(self.exec, None), "cuGraphLaunch")
        self.launches += 1
        self.backend.pending = True
        return True

    def _build(self, packed: dict[int, tuple[bytes, tuple]], args: LaunchArgs | None) -> None:
        self.release()
        check, lib = self.api.driver.check, self.api.lib
        check(lib.cuGraphCreate(ctypes.byref(self.graph), 0), "cuGraphCreate")
        self._add(self.graph, self.schedule, None, packed, args)
        check(lib.cuGraphInstantiateWithFlags(ctypes.byref(self.exec), self.graph, 0), "cuGraphInstantiate")
        self.builds += 1

    def _add(self, graph: Any, steps: Sequence[Any], last: Any, packed: dict, args: LaunchArgs | None) -> Any:
        """Add `steps` to `graph` in order after node `last` (None: first); the last node added."""
        driver = self.api.driver
        for step in steps:
            if isinstance(step, LoopStep):
                handle = _u64()
                driver.check(self.api.lib.cuGraphConditionalHandleCreate(ctypes.byref(handle), graph, driver.context,
                                                                         0, 0), "cuGraphConditionalHandleCreate")
                last = self._kernel(graph, last, self.api.enter, 1, 1, params=[_u64(handle.value)])
                node = _NodeParams(type=_NODE_CONDITIONAL)
                node.params.conditional.handle = handle.value
                node.params.conditional.type = _CONDITIONAL_WHILE
                node.params.conditional.size = 1
                node.params.conditional.ctx = driver.context
                last = self._node(graph, last, node)
                body = node.params.conditional.graphs_out[0]
                inner = self._add(body, step.body, None, packed, args)
                storage = np.dtype(self.backend.storage_dtype(step.dtype))
                counter = self.backend.device_address(args.buffers[step.counter])
                self._kernel(body, inner, self.api.again[storage.itemsize], 1, 1,
                             params=[_u64(counter), _u64(handle.value)])
            else:
                block, blocks = packed[id(step)]
                params = ctypes.create_string_buffer(block, max(len(block), 8))
                size = _size(max(len(block), 8))
                extra = driver.launch_extra(params, size)
                self.keep += [params, size, extra]
                for task, count in zip(step.tasks, blocks):
                    if count is not None:
                        last = self._kernel(graph, last, task.function, count, task.threads, extra=extra)
        return last

    def _kernel(self, graph: Any, last: Any, function: Any, blocks: int, threads: int,
                params: list[Any] | None = None, extra: Any = None) -> Any:
        node = _NodeParams(type=_NODE_KERNEL)
        kernel = node.params.kernel
        kernel.func = function
        kernel.grid[:] = (blocks, 1, 1)
        kernel.block[:] = (threads, 1, 1)
        if params is not None:
            pointers = (_vp * len(params))(*(ctypes.addressof(p) for p in params))
            self.keep += [params, pointers]
            kernel.kernel_params = ctypes.cast(pointers, _vp)
        if extra is not None:
            kernel.extra = ctypes.cast(extra, _vp)
        return self._node(graph, last, node)

    def _node(self, graph: Any, last: Any, node: _NodeParams) -> Any:
        made = _vp()
        depends = (_vp * 1)(last) if last is not None else None
        count = 1 if last is not None else 0
        lib = self.api.lib
        self.api.driver.check(lib.cuGraphAddNode(ctypes.byref(made), graph, depends, count, ctypes.byref(node)),
                              "cuGraphAddNode")
        return made

    def __del__(self) -> None:
        if not self.api.driver.released:
            self.release()

    def release(self) -> None:
        lib = self.api.lib
        if self.exec:
            lib.cuGraphExecDestroy(self.exec)
            self.exec = _vp()
        if self.graph:
            lib.cuGraphDestroy(self.graph)
            self.graph = _vp()
        self.keep = []
        self.key = None


def _loops(steps: Sequence[Any]):
    for step in steps:
        if isinstance(step, LoopStep):
            yield step
            yield from _loops(step.body)
