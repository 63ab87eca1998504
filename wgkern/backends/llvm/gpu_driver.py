"""What the ctypes bindings of the GPU driver libraries (cuda_driver.py: the CUDA driver API; hip_driver.py: the
HIP runtime) have in common: opening the first library found, giving its functions their C types, one binding per
device ordinal made on first use, a probe that never raises, the out-of-memory error, and the `extra` array that
passes a kernel's whole argument block to a launch. Each driver module keeps its own calls, names and errors."""
from __future__ import annotations

import ctypes
import threading
from typing import Any, Callable, Iterable, TypeVar

from wgkern.errors import OutOfMemoryError, WkError

Bound = TypeVar("Bound")


def open_library(names: Iterable[str], missing: str) -> tuple[Any, str]:
    """(the first of `names` that loads, '') or (None, `missing` followed by the first loader error)."""
    reasons = []
    for name in names:
        try:
            return ctypes.CDLL(name), ""
        except OSError as exc:
            reasons.append(str(exc))
    return None, f"{missing} (" + "; ".join(reasons[:1]) + ")"


def type_functions(lib: Any, signatures: dict[str, list[Any]], restypes: dict[str, Any],
                   absent: Callable[[str], WkError]) -> None:
    """Set each function's argtypes and restype (int unless `restypes` says otherwise); a function the library
    lacks raises `absent(name)`."""
    for name, argtypes in signatures.items():
        function = getattr(lib, name, None)
        if function is None:
            raise absent(name)
        function.argtypes = argtypes
        function.restype = restypes.get(name, ctypes.c_int)


def bound_driver(drivers: dict[int, Bound], lock: threading.Lock, ordinal: int,
                 load_library: Callable[[], tuple[Any, str]], make: Callable[[Any, int], Bound],
                 error: type[WkError]) -> Bound:
    """The binding of device `ordinal` kept in `drivers`, made by `make(library, ordinal)` on first use or after
    it was released; raises `error` with load_library's reason where the library is missing."""
    with lock:
        bound = drivers.get(ordinal)
        if bound is None or bound.released:
            lib, reason = load_library()
            if lib is None:
                raise error(reason)
            bound = drivers[ordinal] = make(lib, ordinal)
        return bound


def probe_device(driver: Callable[[int], Any], ordinal: int) -> tuple[Any, str]:
    """(device `ordinal`'s description, '') where `driver(ordinal)` binds it, else (None, why not). Never
    raises: any failure of the library means the device cannot be used."""
    try:
        return driver(ordinal).info, ""
    except WkError as exc:
        return None, str(exc)
    except Exception as exc:  # noqa: BLE001 - any driver failure means 'no such device'
        return None, f"{type(exc).__name__}: {exc}"


def out_of_memory(api: str, nbytes: int, free: int, total: int) -> OutOfMemoryError:
    return OutOfMemoryError(f"{api} could not allocate {nbytes} bytes ({free} of {total} bytes free on the device). "
                            "Remedy: release containers (drop their last references, or wk.reset()), or use "
                            "smaller shapes")


def launch_extra(params: Any, params_size: Any, tags: tuple[int, int, int]) -> Any:
    """A launch's `extra` array passing the ctypes buffer `params` (its size in the size_t `params_size`) as the
    kernel's whole argument block; `tags` are the API's (buffer pointer, buffer size, end) markers. The caller
    keeps both buffers alive."""
    pointer, size, end = tags
    return (ctypes.c_void_p * 5)(pointer, ctypes.addressof(params), size, ctypes.addressof(params_size), end)
