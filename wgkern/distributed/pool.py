"""DevicePool: a kernel program on many devices at once, through Ray actors (actor.py), one device each.

Ray places the actors: with GPUs in the cluster each actor asks for one (`num_gpus=1`) and Ray sets its
CUDA_VISIBLE_DEVICES, so `wk.init(device=0)` there is the GPU Ray assigned, under CUDA and under a wgpu arch
alike (runtime/devices.py); a cluster without GPUs gets CPU actors on wk.cpu, each with `cpus_per_actor`
threads. `map` spreads calls over the actors, keeping each one busy, and gathers the results in order;
`allreduce_gradients` sums gradients across actors for data-parallel optimisation. Ray is started here (a local
instance, or the cluster of $RAY_ADDRESS) unless the caller started it."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import numpy as np

from wgkern.distributed import transport
from wgkern.distributed.actor import DeviceActor


def require_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ImportError("wgkern.distributed runs on Ray: pip install 'wgkern[ray]'") from exc
    return ray


FREED_WAIT_S = 10.0


def _check_room(ray: Any, actors: int, cpus: int, gpus: int) -> None:
    """A clear error, instead of actors waiting for ever, where the cluster has not the CPUs or GPUs free now
    (other pools' actors hold theirs until their shutdown())."""
    import time
    need = {"CPU": actors * cpus, "GPU": actors * gpus}
    deadline = time.monotonic() + FREED_WAIT_S
    while True:          # the actors of a pool just shut down release their resources within a few seconds
        free = ray.available_resources()
        if all(free.get(resource, 0) >= amount for resource, amount in need.items() if amount):
            return
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for resource, each in (("CPU", cpus), ("GPU", gpus)):
        if each and free.get(resource, 0) < actors * each:
            raise ValueError(f"DevicePool: {actors} actors need {actors * each:g} {resource}s and the Ray cluster "
                             f"has {free.get(resource, 0):g} free (shut down other pools, or ask for fewer "
                             "actors)")


class DevicePool:
    """`actors` processes, each owning one device with `program` loaded (see actor.py for programs and tasks).

    arch: the arch of every actor (None: the default GPU arch on GPU actors, wk.cpu on CPU actors).
    actors: how many (None: one per GPU Ray reports, else one per `cpus_per_actor` CPUs).
    gpus: whether actors take a GPU each (None: when Ray reports GPUs and arch is not wk.cpu).
    init_options: more keywords for each actor's wk.init (fast_math, debug, ...)."""

    def __init__(self, program: Any, *, arch: Any = None, actors: int | None = None, gpus: bool | None = None,
                 cpus_per_actor: int = 1, init_options: dict[str, Any] | None = None):
        ray = require_ray()
        if not ray.is_initialized():
            ray.init()
        transport.install()
        from wgkern.runtime.arch import Arch, parse_arch
        requested = parse_arch(arch)
        resources = ray.cluster_resources()
        if gpus is None:
            gpus = resources.get("GPU", 0) >= 1 and requested != Arch.cpu
        if actors is None:
            actors = int(resources.get("GPU", 0)) if gpus else int(resources.get("CPU", 1)) // cpus_per_actor
        if actors < 1:
            raise ValueError(f"DevicePool(actors={actors}): the Ray cluster has room for none "
                             f"(resources: {resources})")
        options = dict(init_options or {})
        if requested is None and not gpus:
            requested = Arch.cpu
        if requested == Arch.cpu:
            options.setdefault("cpu_max_num_threads", cpus_per_actor)
        _check_room(ray, actors, cpus_per_actor, 1 if gpus else 0)
        remote = ray.remote(num_cpus=cpus_per_actor, num_gpus=1 if gpus else 0)(DeviceActor)
        self.arch = requested
        self.actors = [remote.remote() for _ in range(actors)]
        self.devices: list[dict[str, Any]] = transport.get(
            [a.start.remote(program, requested, options) for a in self.actors])

    def __len__(self) -> int:
        return len(self.actors)

    def __enter__(self) -> DevicePool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()

    def shutdown(self) -> None:
        """End the actors (their devices are free again); Ray itself keeps running."""
        ray = require_ray()
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []

    def describe(self) -> list[dict[str, Any]]:
        """Each actor's host, process, arch, device and counters (wk.stats(), offline-cache hits) now."""
        return transport.get([a.describe.remote() for a in self.actors])

    def run_all(self, task: Callable[..., Any], *args: Any, **kwargs: Any) -> list[Any]:
        """`task(program, *args, **kwargs)` on every actor; the results, one per actor."""
        return transport.get([a.call.remote(task, args, kwargs) for a in self.actors])

    def map(self, task: Callable[..., Any], params: Iterable[Any],
            progress: Callable[[int, int], None] | None = None) -> list[Any]:
        """`[task(program, p) for p in params]`, each call on whichever actor is free next; results in the order
        of `params` (fields and ndarrays as numpy). `progress(done, total)` after each result."""
        ray = require_ray()
        pending_params = list(enumerate(params))
        total = len(pending_params)
        results: list[Any] = [None] * total
        running: dict[Any, tuple[int, Any]] = {}
        pending_params.reverse()

        def submit(actor: Any) -> None:
            index, param = pending_params.pop()
            running[actor.call.remote(task, (param,), {})] = (index, actor)

        for actor in self.actors[:total]:
            submit(actor)
        done = 0
        while running:
            ready, _ = ray.wait(list(running), num_returns=1)
            index, actor = running.pop(ready[0])
            try:
                results[index] = transport.get(ready[0])
            except BaseException:
                for ref in running:          # the sweep is over: its other calls need not finish
                    try:
                        ray.cancel(ref)
                    except Exception:  # noqa: BLE001 - a call that cannot be cancelled runs to its end
                        pass
                raise
            done += 1
            if progress is not None:
                progress(done, total)
            if pending_params:
                submit(actor)
        return results

    def gradients(self, names: Sequence[str]) -> list[dict[str, np.ndarray]]:
        """Each actor's gradients of the fields `names` (their `.grad`), as numpy."""
        return transport.get([a.gradients.remote(list(names)) for a in self.actors])

    def allreduce_gradients(self, names: Sequence[str], *, average: bool = False,
                            write_back: bool = True) -> dict[str, np.ndarray]:
        """Sum (or with `average`, the mean of) the gradients of the fields `names` over the actors, summed in
        float64 and returned in each gradient's dtype. With `write_back`, every actor's `.grad` then holds the
        result, so each can take the same optimisation step itself (`run_all`); the driver can instead apply
        the result and send new values with `assign`."""
        per_actor = self.gradients(names)
        reduced = {}
        for name in names:
            parts = [g[name] for g in per_actor]
            total = np.sum([p.astype(np.float64) for p in parts], axis=0)
            if average:
                total /= len(parts)
            reduced[name] = total.astype(parts[0].dtype)
        if write_back:
            transport.get([a.set_gradients.remote(reduced) for a in self.actors])
        return reduced

    def assign(self, values: dict[str, Any]) -> None:
        """Set the fields named by `values`' keys to its arrays on every actor (parameters updated on the driver)."""
        arrays = {name: np.asarray(value) for name, value in values.items()}
        transport.get([a.assign.remote(arrays) for a in self.actors])
