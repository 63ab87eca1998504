"""wgkern.distributed: kernel programs on many devices and hosts through Ray (`pip install 'wgkern[ray]'`).

`DevicePool(program)` starts one Ray actor per device (pool.py), each with `program` loaded on its own
`wk.init` (actor.py); `pool.map(task, params)` runs a parameter sweep across them with results gathered as
numpy (transport.py), and `pool.allreduce_gradients(names)` sums gradients for data-parallel optimisation.
docs/scale-out.md shows a whole run, on one machine and on a cluster."""
from __future__ import annotations

from wgkern.distributed.actor import DeviceActor, load_program, lookup
from wgkern.distributed.pool import DevicePool

__all__ = ["DeviceActor", "DevicePool", "load_program", "lookup"]
