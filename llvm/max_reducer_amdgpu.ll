; AMDGPU kernel wrappers around llvm/max_reducer.ll (wgkern/backends/llvm/amdgpu_sizing_reducer.py); JOB_BYTES is
; replaced by the job parameters' size. Each kernel takes its parameter block in the kernel-argument segment (the
; block hipModuleLaunchKernel passes whole) and hands the bodies a generic pointer to it. A thread's first point is
; its global id (workgroup id x workgroup size + workitem id), the stride the grid's size in work-items; both sizes
; come from the HSA dispatch packet (workgroup_size_x: the u16 at byte 4, grid_size_x: the u32 at byte 12).
declare i32 @llvm.amdgcn.workitem.id.x() nounwind readnone
declare i32 @llvm.amdgcn.workgroup.id.x() nounwind readnone
declare ptr addrspace(4) @llvm.amdgcn.dispatch.ptr() nounwind readnone

define internal { i64, i64 } @wk_thread_span() alwaysinline {
  %tid = call i32 @llvm.amdgcn.workitem.id.x()
  %group = call i32 @llvm.amdgcn.workgroup.id.x()
  %dispatch = call ptr addrspace(4) @llvm.amdgcn.dispatch.ptr()
  %size_at = getelementptr inbounds i8, ptr addrspace(4) %dispatch, i64 4
  %size16 = load i16, ptr addrspace(4) %size_at, align 4
  %size = zext i16 %size16 to i32
  %grid_at = getelementptr inbounds i8, ptr addrspace(4) %dispatch, i64 12
  %grid = load i32, ptr addrspace(4) %grid_at, align 4
  %base = mul i32 %group, %size
  %gid = add i32 %base, %tid
  %first = zext i32 %gid to i64
  %stride = zext i32 %grid to i64
  %span.first = insertvalue { i64, i64 } undef, i64 %first, 0
  %span = insertvalue { i64, i64 } %span.first, i64 %stride, 1
  ret { i64, i64 } %span
}

define amdgpu_kernel void @wk_slice_max(ptr addrspace(4) byref([32 x i8]) align 8 %kernarg) nounwind {
  %p = addrspacecast ptr addrspace(4) %kernarg to ptr
  %span = call { i64, i64 } @wk_thread_span()
  %first = extractvalue { i64, i64 } %span, 0
  %stride = extractvalue { i64, i64 } %span, 1
  call void @wk_slice_range(ptr %p, i64 %first, i64 %stride)
  ret void
}

define amdgpu_kernel void @wk_job_max(ptr addrspace(4) byref([JOB_BYTES x i8]) align 8 %kernarg) nounwind {
  %p = addrspacecast ptr addrspace(4) %kernarg to ptr
  %span = call { i64, i64 } @wk_thread_span()
  %first = extractvalue { i64, i64 } %span, 0
  %stride = extractvalue { i64, i64 } %span, 1
  call void @wk_job_range(ptr %p, i64 %first, i64 %stride)
  ret void
}

; the empty node the bodies' atomics name in their metadata (amdgpu_sizing_reducer.device_atomics)
!0 = !{}
