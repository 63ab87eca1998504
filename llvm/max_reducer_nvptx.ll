; NVPTX kernel wrappers around llvm/max_reducer.ll; JOB_BYTES is replaced by the job parameters' size.
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x() nounwind readnone
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x() nounwind readnone
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x() nounwind readnone
declare i32 @llvm.nvvm.read.ptx.sreg.nctaid.x() nounwind readnone

define internal void @wk_thread_span(ptr %first, ptr %stride) alwaysinline {
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %nctaid = call i32 @llvm.nvvm.read.ptx.sreg.nctaid.x()
  %base = mul i32 %ctaid, %ntid
  %gid = add i32 %base, %tid
  %gid64 = zext i32 %gid to i64
  store i64 %gid64, ptr %first, align 8
  %ntid64 = zext i32 %ntid to i64
  %nctaid64 = zext i32 %nctaid to i64
  %step = mul i64 %ntid64, %nctaid64
  store i64 %step, ptr %stride, align 8
  ret void
}

define void @wk_slice_max(ptr byval([32 x i8]) align 8 %p) nounwind {
  %first = alloca i64, align 8
  %stride = alloca i64, align 8
  call void @wk_thread_span(ptr %first, ptr %stride)
  %f = load i64, ptr %first, align 8
  %s = load i64, ptr %stride, align 8
  call void @wk_slice_range(ptr %p, i64 %f, i64 %s)
  ret void
}

define void @wk_job_max(ptr byval([JOB_BYTES x i8]) align 8 %p) nounwind {
  %first = alloca i64, align 8
  %stride = alloca i64, align 8
  call void @wk_thread_span(ptr %first, ptr %stride)
  %f = load i64, ptr %first, align 8
  %s = load i64, ptr %stride, align 8
  call void @wk_job_range(ptr %p, i64 %f, i64 %s)
  ret void
}
!nvvm.annotations = !{!0, !1}
!0 = !{ptr @wk_slice_max, !"kernel", i32 1}
!1 = !{ptr @wk_job_max, !"kernel", i32 1}
