"""What `wgkern.provide("taichi")` supplies: Taichi 1.7.4's module layout mapped onto wgkern's objects, the
modules wgkern has no counterpart for, and the conventions of `ti.init`."""
from __future__ import annotations

from wgkern.compat.finder import Toolkit
from wgkern.runtime.ported_init import InitConventions

# Taichi module -> wgkern's object for it (compat/finder.py: a module, or a namespace reached by attributes).
MODULES = {
    "taichi": "wgkern",
    "taichi.lang": "wgkern.lang",
    "taichi.lang.impl": "wgkern.lang.impl",
    "taichi._logging": "wgkern._logging",
    "taichi.lang.misc": "wgkern.lang.misc",
    "taichi.lang.ops": "wgkern.lang.ops",
    "taichi.lang.expr": "wgkern.lang.expr",
    "taichi.lang.exception": "wgkern.lang.exception",
    "taichi.lang.matrix": "wgkern.lang.matrix",
    "taichi.lang.field": "wgkern.lang.fields",
    "taichi.lang.snode": "wgkern.lang.snode",
    "taichi.lang.struct": "wgkern.lang.structs",
    "taichi.lang.kernel_impl": "wgkern.lang.kernel",
    "taichi.lang.simt": "wgkern.lang.simt",
    "taichi.lang.simt.block": "wgkern.lang.simt.block",
    "taichi.lang.simt.grid": "wgkern.lang.simt.grid",
    "taichi.lang.simt.subgroup": "wgkern.lang.simt.subgroup",
    "taichi.lang.simt.warp": "wgkern.lang.simt.warp",
    "taichi.types": "wgkern.types",
    "taichi.types.primitive_types": "wgkern.types.primitive_types",
    "taichi.types.quant": "wgkern.types.quant",
    "taichi.types.annotations": "wgkern.types",
    "taichi.types.compound_types": "wgkern.types",
    "taichi.types.texture_type": "wgkern.types",
    "taichi.types.ndarray_type": "wgkern.lang.types",
    "taichi.math": "wgkern.math",
    "taichi.math.mathimpl": "wgkern.math",
    "taichi.ad": "wgkern.ad",
    "taichi.algorithms": "wgkern.algorithms",
    "taichi.linalg": "wgkern.linalg",
    "taichi.linalg.sparse_matrix": "wgkern.linalg",
    "taichi.linalg.sparse_solver": "wgkern.linalg.solver",
    "taichi.linalg.sparse_cg": "wgkern.linalg.cg",
    "taichi.linalg.matrixfree_cg": "wgkern.linalg.matrixfree",
    "taichi.tools": "wgkern.tools",
    "taichi.tools.image": "wgkern.tools.image",
    "taichi.tools.video": "wgkern.tools.video",
    "taichi.tools.np2ply": "wgkern.tools.np2ply",
    "taichi.tools.vtk": "wgkern.tools.vtk",
    "taichi.ui": "wgkern.ui",
    "taichi.ui.gui": "wgkern.gui",
    "taichi.ui.window": "wgkern.ui.window",
    "taichi.ui.canvas": "wgkern.ui.canvas",
    "taichi.ui.scene": "wgkern.ui.scene",
    "taichi.ui.camera": "wgkern.ui.camera",
    "taichi.ui.imgui": "wgkern.ui.imgui",
    "taichi.ui.constants": "wgkern.ui.constants",
    "taichi.graph": "wgkern.graph",
    "taichi.profiler": "wgkern.profiler",
    "taichi.experimental": "wgkern.experimental",
    "taichi._lib": "wgkern._lib",
    "taichi._lib.core": "wgkern._lib.core",
}

# Taichi module -> the feature it holds, which wgkern does not have (importing it raises, saying so).
MISSING = {
    "taichi.lang.util": "Taichi's internal helpers (dtype conversions between Taichi, numpy and torch, scope "
                        "checks)",
    "taichi.lang.mesh": "MeshTaichi meshes (`ti.Mesh`)",
    "taichi.aot": "ahead-of-time modules (`ti.aot`)",
    "taichi.sparse": "Taichi's sparse grids (`ti.sparse`)",
    "taichi.tools.diagnose": "Taichi's installation diagnosis",
    "taichi.examples": "Taichi's bundled example programs and their helpers (part of the taichi "
                          "package)",
    "taichi.lang.enums": "Taichi's enums (`Layout`, `AutodiffMode`, `SNodeGradType`, `Format`)",
}

# Every keyword Taichi 1.7.4's `ti.init` accepts: its compile configuration and its own parameters.
INIT_OPTIONS = frozenset("""
    ad_stack_size advanced_optimization allow_nv_shader_extension auto_mesh_local_default_occupacy
    cache_loop_invariant_global_vars cfg_optimization check_out_of_bound cpu_block_dim_adaptive
    cpu_max_num_threads cuda_stack_limit debug default_cpu_block_dim default_fp default_gpu_block_dim default_ip
    demote_dense_struct_fors demote_no_access_mesh_fors detect_read_only device_memory_GB device_memory_fraction
    experimental_auto_mesh_local fast_math flatten_if force_scalarize_matrix gpu_max_reg half2_vectorization
    kernel_profiler lower_access make_block_local make_cpu_multithreading_loop make_mesh_block_local
    make_thread_local max_block_dim mesh_localize_all_attr_mappings mesh_localize_from_end_mapping
    mesh_localize_to_end_mapping move_loop_invariant_outside_if num_compile_threads offline_cache
    offline_cache_cleaning_factor offline_cache_cleaning_policy offline_cache_file_path
    offline_cache_max_size_of_files opt_level optimize_mesh_reordered_mapping print_accessor_ir print_ir
    print_ir_dbg_info print_kernel_amdgcn print_kernel_asm print_kernel_llvm_ir print_kernel_llvm_ir_optimized
    print_preprocessed_ir print_struct_llvm_ir quant_opt_atomic_demotion quant_opt_store_fusion random_seed
    real_matrix_scalarize saturating_grid_dim simplify_after_lower_access simplify_before_lower_access timeline
    use_llvm verbose verbose_kernel_launches vk_api_version
""".split())

# Packages of Taichi's layout with submodules (private ones) that the tables above do not list.
PACKAGES = frozenset({"taichi.ad", "taichi.algorithms", "taichi.graph", "taichi.profiler"})

# Taichi modules that hold the top-level names as well (`from taichi.lang import cpu`).
REEXPORTS = {"taichi.lang": "wgkern", "taichi.lang.misc": "wgkern"}

TOOLKIT = Toolkit("taichi", "Taichi", MODULES, MISSING, packages=PACKAGES, reexports=REEXPORTS,
                  init=InitConventions("ti.init", "TI", INIT_OPTIONS))
