"""The options of Taichi's `ti.init` that ported programs pass to `wk.init`, and what each means here.

Acting: `default_fp` / `default_ip` (the dtype of float/int literals, `float` and `int`), `device_memory_GB` (the
device memory limit of GPU arches, when `device_memory_limit` is not given; as in Taichi, whose CPU backend takes
host memory as needed, it does not cap the CPU: backends/llvm/host_memory.py), `check_out_of_bound` (bounds-checked accesses,
as `debug=True`), `cpu_max_num_threads` (the CPU backend's threads, the launching one included),
`short_circuit_operators` (run-time `and`/`or` stop evaluating operands once the result is decided), the offline
cache's `offline_cache_file_path`, `offline_cache_max_size_of_files`, `offline_cache_cleaning_policy` and
`offline_cache_cleaning_factor` (disk_cache.py), `enable_fallback=True` (a missing arch gives the CPU
instead of ArchUnavailableError; unlike Taichi's, wk.init's default is False).
Accepted because they ask for what wgkern always does or only tune Taichi's or Quadrants' own machinery (memory
pool, logging, IR printing, the Vulkan API version, SNode packing, dynamic indexing of local vectors, optimisation
passes, block sizes, Quadrants' `ad_stack_experimental_enabled` switch): `TAICHI_ACCEPTED`. Any other keyword is a TypeError naming it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wgkern.errors import WkError

TAICHI_ACCEPTED = frozenset({
    "device_memory_fraction",   # Taichi pre-allocates a pool of this size; wgkern allocates per container
    "packed",                   # wgkern's fields are always packed (no power-of-two padding)
    "dynamic_index",            # local vectors are always indexable by run-time values
    "advanced_optimization",    # Taichi's IR optimisation switch; wgkern's passes always run
    "opt_level",
    "log_level",
    "verbose",
    "excepthook",
    "print_ir",
    "print_kernel_llvm_ir",
    "kernel_profiler",          # see wk.profiler: kernels are timed when it is on (runtime/profiler.py)
    "vk_api_version",           # the Vulkan API version Taichi's own Vulkan runtime asks for; wgpu negotiates its own
    # Quadrants' options of the same kinds
    "ad_stack_experimental_enabled",  # reverse mode always differentiates dynamic loops through adstacks
    "ad_stack_sparse_threshold_bytes",  # Quadrants' heap-sizing cutoff; wgkern sizes every adstack at each launch
    "cfg_optimization",         # Quadrants' store-to-load forwarding switch; wgkern's forwarding always runs
    "cache_loop_invariant_global_vars",
    "flatten_if",
    "make_thread_local",
    "make_block_local",
    "demote_dense_struct_fors",
    "detect_read_only",
    "move_loop_invariant_outside_if",
    "num_compile_threads",
    "default_cpu_block_dim",
    "default_gpu_block_dim",
    "max_block_dim",
    "saturating_grid_dim",
    "real_matrix_scalarize",
    "force_scalarize_matrix",
    "print_preprocessed_ir",
    "print_ir_dbg_info",
    "print_kernel_llvm_ir_optimized",
    "print_kernel_asm",
    "print_full_traceback",
    "src_ll_cache",             # Quadrants' source-keyed kernel cache; wgkern's offline cache keys compiled code
    "gdb_trigger",              # attach gdb on a crash; device errors raise Python exceptions here
})


# The Taichi options that change what wgkern does (see the module docstring).
TAICHI_ACTING = frozenset({"default_fp", "default_ip", "device_memory_GB", "check_out_of_bound", "cpu_max_num_threads",
                           "short_circuit_operators", "offline_cache_file_path", "offline_cache_max_size_of_files",
                           "offline_cache_cleaning_policy", "offline_cache_cleaning_factor", "enable_fallback"})


@dataclass(frozen=True, slots=True)
class TaichiOptions:
    debug: bool = False
    device_memory_limit: int | None = None
    threads: int | None = None
    default_fp: Any = None
    default_ip: Any = None
    kernel_profiler: bool = False
    short_circuit_operators: bool = False
    cache_path: str | None = None
    cache_max_bytes: int | None = None
    cache_policy: str | None = None
    cache_factor: float | None = None
    enable_fallback: bool = False


def taichi_init_options(options: dict[str, Any]) -> TaichiOptions:
    """Sort the keywords `wk.init` does not name itself (see the module docstring)."""
    unknown = sorted(set(options) - TAICHI_ACTING - TAICHI_ACCEPTED)
    if unknown:
        raise TypeError(f"wk.init() got unexpected keyword arguments: {', '.join(unknown)}")
    memory = options.get("device_memory_GB")
    threads = options.get("cpu_max_num_threads")
    if threads is not None and (not isinstance(threads, int) or threads < 1):
        raise ValueError(f"cpu_max_num_threads must be a positive int, not {threads!r}")
    if memory is not None and not memory > 0:
        raise ValueError(f"device_memory_GB must be positive, not {memory!r}")
    from wgkern.disk_cache import POLICIES
    policy = options.get("offline_cache_cleaning_policy")
    if policy is not None and policy not in POLICIES:
        raise ValueError(f"offline_cache_cleaning_policy must be one of {', '.join(map(repr, POLICIES))}, "
                         f"not {policy!r}")
    size = options.get("offline_cache_max_size_of_files")
    if size is not None and not (isinstance(size, int) and size > 0):
        raise ValueError(f"offline_cache_max_size_of_files must be a positive number of bytes, not {size!r}")
    factor = options.get("offline_cache_cleaning_factor")
    if factor is not None and not 0 < factor <= 1:
        raise ValueError(f"offline_cache_cleaning_factor must be in (0, 1], not {factor!r}")
    path = options.get("offline_cache_file_path")
    return TaichiOptions(
        debug=bool(options.get("check_out_of_bound", False)),
        device_memory_limit=int(memory * (1 << 30)) if memory is not None else None,
        threads=threads,
        default_fp=options.get("default_fp"),
        default_ip=options.get("default_ip"),
        kernel_profiler=bool(options.get("kernel_profiler", False)),
        short_circuit_operators=bool(options.get("short_circuit_operators", False)),
        cache_path=str(path) if path is not None else None,
        cache_max_bytes=size,
        cache_policy=policy,
        cache_factor=factor,
        enable_fallback=bool(options.get("enable_fallback", False)),
    )


# The Taichi release whose Python API wgkern follows: `wk.require_version` compares against it.
TAICHI_API_VERSION = (1, 7, 4)


def require_version(major: int, minor: int | None = None, patch: int | None = None) -> None:
    """Taichi's `ti.require_version(major, minor, patch)`: a program written for Taichi 0.x or 1.x up to
    `TAICHI_API_VERSION` runs as it is; one asking for a later Taichi raises, naming both versions."""
    parts = (major, minor, patch) if minor is not None else tuple(int(p) for p in str(major).split("."))
    if not all(isinstance(p, int) and not isinstance(p, bool) or p is None for p in parts):
        raise WkError(f"wk.require_version{parts!r}: give integer version numbers, e.g. require_version(1, 7, 0)")
    wanted = tuple(p or 0 for p in parts) + (0,) * (3 - len(parts))
    if wanted > TAICHI_API_VERSION:
        have = ".".join(map(str, TAICHI_API_VERSION))
        raise WkError(f"this program requires Taichi {'.'.join(map(str, wanted))}; wgkern follows the API of "
                      f"Taichi {have}")
