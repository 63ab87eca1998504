"""Arena buffers for packed binding: a kernel touching more containers than the device has storage bindings.

Owns where packed containers live: shared device buffers (arenas) holding several containers at aligned offsets,
bump-allocated, and the move of a container into an arena (once, a GPU copy recorded in order; its WgslBuffer
handle keeps its identity, only `buffer`/`offset` change). Which slots share a binding is the codegen's
BindingPlan; the Backend (runtime.py) calls `Arenas.bind` per packed launch."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from wgkern.errors import OutOfMemoryError

if TYPE_CHECKING:
    from wgkern.backends.wgsl.bindings import BindingPlan
    from wgkern.backends.wgsl.runtime import WgslBackend, WgslBuffer

MIN_ARENA_BYTES = 1 << 20     # a new arena leaves room for containers that join it later


class Arena:
    """One shared buffer: `handle` is a WgslBuffer over all of it; `used` bytes are handed out (bump);
    `residents` counts the live containers inside (at 0 the buffer is released)."""
    __slots__ = ("handle", "used", "residents")

    def __init__(self, handle: WgslBuffer):
        self.handle = handle
        self.used = 0
        self.residents = 0

    def room(self) -> int:
        return self.handle.capacity - self.used


class Arenas:
    """The backend's arenas. `epoch` changes whenever a container moves or an arena resident is freed, so a
    compiled kernel may reuse its last (arenas, bases) while the epoch and its buffers are unchanged."""

    def __init__(self, backend: WgslBackend):
        self.backend = backend
        self.alignment = max(256, backend.offset_alignment)   # a window offset is valid for any binding
        self.epoch = 0

    def reserved(self, handle: WgslBuffer) -> int:
        return -(-handle.capacity // self.alignment) * self.alignment

    def bind(self, plan: BindingPlan, handles: Sequence[WgslBuffer]) -> tuple[tuple[WgslBuffer, ...], list[int]]:
        """The arena bound at each packed binding and each slot's base (in elements), moving containers so
        that the slots of one binding share one arena. Bindings that share a container (one buffer passed for
        two slots typed differently, say atomic and plain) form one group that shares one arena."""
        groups: list[tuple[set[int], dict[int, WgslBuffer]]] = []    # (bindings, members by id)
        for binding in range(1, plan.bindings + 1):
            members = {id(handles[k]): handles[k] for k in plan.slots_of(binding)}
            bindings = {binding}
            for group in [g for g in groups if g[1].keys() & members.keys()]:
                groups.remove(group)
                bindings |= group[0]
                members.update(group[1])
            groups.append((bindings, members))
        home_of: dict[int, Arena] = {}
        for bindings, members in groups:
            listed = list(members.values())
            home = listed[0].arena
            if home is None or any(h.arena is not home for h in listed):
                home = self.gather(listed, min(bindings))
            home_of.update((binding, home) for binding in bindings)
        arenas = tuple(home_of[binding].handle for binding in range(1, plan.bindings + 1))
        bases = [handle.offset // element_bytes for handle, element_bytes in zip(handles, plan.slot_element_bytes)]
        return arenas, bases

    def gather(self, members: list[WgslBuffer], binding: int) -> Arena:
        """Put every member into one arena: the one already holding the most of them when the rest fits at its
        end, else a new arena holding all of them."""
        held: dict[int, tuple[Arena, int]] = {}
        for h in members:
            if h.arena is not None:
                arena, size = held.get(id(h.arena), (h.arena, 0))
                held[id(h.arena)] = (arena, size + self.reserved(h))
        best = max(held.values(), key=lambda pair: pair[1])[0] if held else None
        if best is not None and sum(self.reserved(h) for h in members if h.arena is not best) <= best.room():
            home = best
        else:
            total = sum(self.reserved(h) for h in members)
            limit = self.backend.max_binding
            if total > limit:
                raise OutOfMemoryError(
                    f"packed binding {binding} needs its {len(members)} containers ({total} bytes, aligned) in one "
                    f"buffer, more than this device's max_storage_buffer_binding_size of {limit} bytes")
            home = Arena(self.backend.allocate(min(max(2 * total, MIN_ARENA_BYTES), limit)))
        for h in members:
            if h.arena is not home:
                self.move(h, home)
        return home

    def move(self, handle: WgslBuffer, arena: Arena) -> None:
        """Copy `handle`'s storage to the end of `arena`, in order after the launches recorded so far."""
        backend = self.backend
        offset = arena.used
        arena.used += self.reserved(handle)
        backend.commands.copy_buffer_to_buffer(handle.buffer, handle.offset, arena.handle.buffer, offset, handle.capacity)
        if handle.arena is not None:
            # the copy just recorded reads the old arena: if this was its last resident, it must be retired
            # after the submit, not destroyed now (wgpu aborts a submit that uses a destroyed buffer)
            backend.pending_buffers.add(handle.arena.handle)
            self.leave(handle)
        else:
            backend.keepalive.append(handle.buffer)   # dropped after the submit that copies out of it
            backend.release_bytes(handle.buffer)
        backend.forget_bind_groups(handle)
        handle.buffer, handle.offset, handle.arena = arena.handle.buffer, offset, arena
        arena.residents += 1
        backend.pending_buffers.update((handle, arena.handle))
        backend.stats["arena_moves"] += 1
        self.epoch += 1

    def leave(self, handle: WgslBuffer) -> None:
        """`handle` no longer lives in its arena (moved or freed); an emptied arena is released."""
        arena: Arena = handle.arena
        handle.arena = None
        arena.residents -= 1
        self.epoch += 1
        if arena.residents == 0:
            self.backend.release_arena(arena.handle)


def same_buffers(last: Any, handles: Sequence[Any]) -> bool:
    return last is not None and len(last) == len(handles) and all(a is b for a, b in zip(last, handles))
