"""The two wgpu calls of every launch (set the bind group with its ring offset, dispatch), made cheaply.

wgpu-py's public encoder methods wrap each native call in error capture and allocate the dynamic-offset array
anew: about 3.5 us of the ~9 us a set_bind_group + dispatch pair costs through them (measured on this
project's 2-core CI machine). Encoding errors are recorded on the command encoder by wgpu-native and raised
by wgpu-py at `encoder.finish()` either way, so the hot path calls wgpu-native directly through wgpu-py's cffi
library; where wgpu-py's internals are not what this module expects it uses the public methods. Objects the
native calls reference must stay alive until the pass is submitted: the backend's bind-group cache holds
them, and bind groups it drops while a pass is open go to its keepalive list."""
from __future__ import annotations

from typing import Any


class LaunchEncoder:
    """`set_bind_group(pass, group, offset)` and `dispatch(pass, x, y)` for an open compute pass."""

    def __init__(self) -> None:
        self.raw = False
        try:
            from wgpu.backends.wgpu_native import _api
            self._set_bind_group = _api.lib.wgpuComputePassEncoderSetBindGroup
            self._dispatch = _api.lib.wgpuComputePassEncoderDispatchWorkgroups
            self._offset = _api.ffi.new("uint32_t[1]")
            self.raw = True
        except (ImportError, AttributeError):
            pass

    def set_bind_group(self, compute_pass: Any, bind_group: Any, offset: int) -> None:
        if self.raw:
            try:
                self._offset[0] = offset
                self._set_bind_group(compute_pass._internal, 0, bind_group._internal, 1, self._offset)
                return
            except AttributeError:      # an object without the native handle: use the public API from now on
                self.raw = False
        compute_pass.set_bind_group(0, bind_group, [offset])

    def dispatch(self, compute_pass: Any, x: int, y: int) -> None:
        if self.raw:
            self._dispatch(compute_pass._internal, x, y, 1)
        else:
            compute_pass.dispatch_workgroups(x, y)
