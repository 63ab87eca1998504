"""What crosses between a DevicePool's driver and its actors besides plain Python values: fields and ndarrays
leave an actor as numpy arrays (their values; a container's `.grad` is a field of its own and converts the same
way), and an exception raised in an actor reaches the driver as itself (the same wgkern class and message),
not wrapped in Ray's RayTaskError.

Plain `pickle` keeps its own rule for containers (lang/container_pickle.py: a container rebuilt in the
unpickling program); the numpy rule applies only to Ray's serialization, in the processes that call
`install()` (the driver's DevicePool and every actor)."""
from __future__ import annotations

from typing import Any

import numpy as np


def _container_classes() -> list[type]:
    from wgkern.lang.fields import Container
    found, pending = [], [Container]
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


def container_to_numpy(container: Any) -> np.ndarray:
    """A field's or ndarray's values on the host (a field's one-column matrices keep their column)."""
    if getattr(container, "is_field", False):
        return container.to_numpy(keep_dims=True)
    return container.to_numpy()


def _as_is(value: np.ndarray) -> np.ndarray:
    return value


def install() -> None:
    """Make Ray serialize wgkern's fields and ndarrays as numpy arrays in this process."""
    import ray.util
    for cls in _container_classes():
        ray.util.register_serializer(cls, serializer=container_to_numpy, deserializer=_as_is)


def get(refs: Any) -> Any:
    """`ray.get(refs)` (one reference or a list), raising an actor's exception as itself: the exception object
    the task raised (its class and message as they were), with a note naming the actor's process where Python
    supports notes. With a list, every task is waited for before the first error is raised (so none is left
    unread)."""
    import ray
    if not isinstance(refs, list):
        return _get_one(ray, refs)
    results, first_error = [], None
    for ref in refs:
        try:
            results.append(_get_one(ray, ref))
        except Exception as exc:  # noqa: BLE001 - re-raised below, after the other tasks are read
            first_error = first_error or exc
            results.append(None)
    if first_error is not None:
        raise first_error
    return results


def _get_one(ray: Any, ref: Any) -> Any:
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException):
            if hasattr(cause, "add_note"):
                pid, ip = getattr(exc, "pid", None), getattr(exc, "ip", None)
                where = f", process {pid} on {ip}" if pid and ip else ""
                cause.add_note(f"(raised in a wgkern.distributed actor{where})")
            raise cause from None
        raise
