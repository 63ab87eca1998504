"""The `vulkan` argument every scene script of this folder takes: Genesis 1.4.5 has no Vulkan backend, so with it
a script keeps `gs.init(backend=gs.cpu)` and has `quadrants.init` (which gs.init calls) put the kernels on
`quadrants.vulkan`, with Genesis's zero-copy torch views off (GS_ENABLE_ZEROCOPY=0: the arrays live on the
device). Imported by the scripts as they run (their folder is sys.path[0])."""
from __future__ import annotations

import os

VULKAN = "vulkan"


def put_kernels_on_vulkan() -> None:
    """Make `quadrants.init` run the kernels on Vulkan, whatever arch its caller asks for."""
    os.environ["GS_ENABLE_ZEROCOPY"] = "0"
    import quadrants
    init = quadrants.init

    def vulkan_init(*args, **kwargs):
        kwargs["arch"] = quadrants.vulkan
        return init(*args, **kwargs)
    quadrants.init = vulkan_init


def scene_arguments(argv: list[str]) -> list[str]:
    """A script's arguments (argv[1:]) without a trailing `vulkan`; where there was one, the kernels go on
    Vulkan (put_kernels_on_vulkan)."""
    arguments = list(argv[1:])
    if arguments and arguments[-1] == VULKAN:
        arguments.pop()
        put_kernels_on_vulkan()
    return arguments
