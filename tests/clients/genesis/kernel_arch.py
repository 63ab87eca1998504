"""What the scene scripts of this folder share to put Genesis's kernels on Vulkan. Imported by the scripts as they
run (their folder is sys.path[0])."""
from __future__ import annotations


def on_vulkan() -> None:
    """Make `quadrants.init` (which gs.init calls) run the kernels on Vulkan."""
    import os
    os.environ["GS_ENABLE_ZEROCOPY"] = "0"
    import quadrants
    init = quadrants.init

    def vulkan_init(*args, **kwargs):
        kwargs["arch"] = quadrants.vulkan
        return init(*args, **kwargs)
    quadrants.init = vulkan_init
