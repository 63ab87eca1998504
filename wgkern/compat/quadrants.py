"""What `wgkern.provide("quadrants")` supplies: Quadrants 1.3.3's module layout mapped onto wgkern's objects, the
modules wgkern has no counterpart for, and the conventions of `qd.init`."""
from __future__ import annotations

from wgkern.compat.finder import Toolkit
from wgkern.runtime.ported_init import InitConventions

# Quadrants module -> wgkern's object for it (compat/finder.py: a module, or a namespace reached by attributes).
MODULES = {
    "quadrants": "wgkern",
    "quadrants.lang": "wgkern.lang",
    "quadrants.lang.impl": "wgkern.lang.impl",
    "quadrants.lang._template_mapper": "wgkern.lang._template_mapper",
    "quadrants._logging": "wgkern._logging",
    "quadrants.lang.misc": "wgkern.lang.misc",
    "quadrants.lang.graph": "wgkern.graph",             # qd.graph: do_while, parallel_context, parallel
    "quadrants.lang.ops": "wgkern.lang.ops",
    "quadrants.lang.expr": "wgkern.lang.expr",
    "quadrants.lang.exception": "wgkern.lang.exception",
    "quadrants.lang.matrix": "wgkern.lang.matrix",
    "quadrants.lang.field": "wgkern.lang.fields",
    "quadrants.lang.snode": "wgkern.lang.snode",
    "quadrants.lang.struct": "wgkern.lang.structs",
    "quadrants.lang.kernel_impl": "wgkern.lang.kernel",
    "quadrants.lang.buffer_view": "wgkern.lang.buffer_view",
    "quadrants.lang.stream": "wgkern.lang.stream",
    "quadrants.lang.simt": "wgkern.lang.simt",
    "quadrants.lang.simt.block": "wgkern.lang.simt.block",
    "quadrants.lang.simt.grid": "wgkern.lang.simt.grid",
    "quadrants.lang.simt.subgroup": "wgkern.lang.simt.subgroup",
    "quadrants.lang.simt.warp": "wgkern.lang.simt.warp",
    "quadrants.types": "wgkern.types",
    "quadrants.types.primitive_types": "wgkern.types.primitive_types",
    "quadrants.types.quant": "wgkern.types.quant",
    "quadrants.types.annotations": "wgkern.types",
    "quadrants.types.compound_types": "wgkern.types",
    "quadrants.types.ndarray_type": "wgkern.lang.types",
    "quadrants.math": "wgkern.math",
    "quadrants.math.mathimpl": "wgkern.math",
    "quadrants.ad": "wgkern.ad",
    "quadrants.algorithms": "wgkern.algorithms",
    "quadrants.linalg": "wgkern.linalg",
    "quadrants.linalg.sparse_matrix": "wgkern.linalg",
    "quadrants.linalg.sparse_solver": "wgkern.linalg.solver",
    "quadrants.linalg.sparse_cg": "wgkern.linalg.cg",
    "quadrants.linalg.matrixfree_cg": "wgkern.linalg.matrixfree",
    "quadrants.tools": "wgkern.tools",
    "quadrants.tools.np2ply": "wgkern.tools.np2ply",
    "quadrants.tools.vtk": "wgkern.tools.vtk",
    "quadrants.profiler": "wgkern.profiler",
    "quadrants.experimental": "wgkern.experimental",
    "quadrants._tensor": "wgkern.lang.tensor",
    "quadrants._lib": "wgkern._lib",
    "quadrants._lib.core": "wgkern._lib.core",
}

# Quadrants module -> the feature it holds, which wgkern does not have (importing it raises, saying so).
MISSING = {
    "quadrants.lang.util": "Quadrants' internal helpers (dtype conversions between Quadrants, numpy and torch, "
                           "scope checks)",
    "quadrants.lang._fast_caching": "Quadrants' source-hash kernel cache (`@qd.kernel(fastcache=True)` works: "
                                    "wgkern's offline cache keeps such a kernel's compiled IR under what its "
                                    "compile read, checked at each start)",
    "quadrants.lang.mesh": "meshes (`qd.Mesh`)",
    "quadrants.sparse": "Quadrants' sparse grids (`qd.sparse`)",
    "quadrants.interop": "Quadrants' torch MPS interop",
    "quadrants.tools.diagnose": "Quadrants' installation diagnosis",
    "quadrants.examples": "Quadrants' bundled example programs and their helpers (part of the quadrants "
                          "package)",
    "quadrants.types.enums": "Quadrants' enums (`Layout`, `AutodiffMode`, `SNodeGradType`, `Format`)",
}

# Every keyword Quadrants 1.3.3's `qd.init` accepts: its compile configuration and its own parameters.
INIT_OPTIONS = frozenset("""
    ad_stack_experimental_enabled ad_stack_size ad_stack_sparse_threshold_bytes advanced_optimization
    auto_mesh_local_default_occupacy cache_loop_invariant_global_vars cfg_optimization check_out_of_bound
    cpu_max_num_threads cuda_stack_limit debug debug_dump_path default_cpu_block_dim default_fp
    default_gpu_block_dim default_ip demote_dense_struct_fors demote_no_access_mesh_fors detect_read_only
    device_memory_GB device_memory_fraction experimental_auto_mesh_local external_metal_command_queue
    external_metal_command_queue_is_torch_queue fast_math flatten_if force_scalarize_matrix half2_vectorization
    kernel_profiler make_block_local make_cpu_multithreading_loop make_mesh_block_local make_thread_local
    max_block_dim mesh_localize_all_attr_mappings mesh_localize_from_end_mapping mesh_localize_to_end_mapping
    move_loop_invariant_outside_if num_compile_threads offline_cache offline_cache_cleaning_factor
    offline_cache_cleaning_policy offline_cache_file_path offline_cache_max_size_of_files opt_level
    optimize_mesh_reordered_mapping print_accessor_ir print_ir print_ir_dbg_info print_kernel_amdgcn
    print_kernel_asm print_kernel_llvm_ir print_kernel_llvm_ir_optimized print_preprocessed_ir
    print_struct_llvm_ir quant_opt_atomic_demotion quant_opt_store_fusion raise_on_templated_floats random_seed
    real_matrix_scalarize saturating_grid_dim timeline vk_api_version print_non_pure src_ll_cache
""".split())

# Packages of Quadrants' layout with submodules (private ones) that the tables above do not list.
PACKAGES = frozenset({"quadrants.ad", "quadrants.algorithms", "quadrants.profiler"})

# Quadrants modules that hold the top-level names as well (`from quadrants.lang import cpu`).
REEXPORTS = {"quadrants.lang": "wgkern", "quadrants.lang.misc": "wgkern"}

TOOLKIT = Toolkit("quadrants", "Quadrants", MODULES, MISSING, packages=PACKAGES, reexports=REEXPORTS,
                  init=InitConventions("qd.init", "QD", INIT_OPTIONS))
