; The launch-time sizer's max-reducer bodies, target independent (wgkern/backends/llvm/gpu_sizing_reducer.py):
; `*_range(params, first, stride)` handles points first, first + stride, ...
declare i32 @llvm.umax.i32(i32, i32)
declare i32 @llvm.smax.i32(i32, i32)
declare {i32, i1} @llvm.sadd.with.overflow.i32(i32, i32)
declare {i32, i1} @llvm.ssub.with.overflow.i32(i32, i32)
declare {i32, i1} @llvm.smul.with.overflow.i32(i32, i32)

; slice params: data (ptr), count (i64), bias (i32), out (ptr to one u32 key)
define void @wk_slice_range(ptr %p, i64 %first, i64 %stride) alwaysinline {
entry:
  %data = load ptr, ptr %p, align 8
  %count_at = getelementptr inbounds i8, ptr %p, i64 8
  %count = load i64, ptr %count_at, align 8
  %bias_at = getelementptr inbounds i8, ptr %p, i64 16
  %bias = load i32, ptr %bias_at, align 4
  %out_at = getelementptr inbounds i8, ptr %p, i64 24
  %out = load ptr, ptr %out_at, align 8
  br label %loop
loop:
  %i = phi i64 [%first, %entry], [%next, %body]
  %acc = phi i32 [0, %entry], [%best, %body]
  %more = icmp slt i64 %i, %count
  br i1 %more, label %body, label %done
body:
  %at = getelementptr inbounds i32, ptr %data, i64 %i
  %value = load i32, ptr %at, align 4
  %key = xor i32 %value, %bias
  %best = call i32 @llvm.umax.i32(i32 %acc, i32 %key)
  %next = add i64 %i, %stride
  br label %loop
done:
  %old = atomicrmw umax ptr %out, i32 %acc monotonic, align 4
  ret void
}

; the element `index` of container `table[base]`, `kind` = signed | WIDTH_8 (2) or WIDTH_16 (4) (bytecode.py);
; flags: 2 out of bounds (index >= extent, unsigned compare), 4 an unsigned 32-bit value above i32 (read as 0)
define internal i32 @wk_job_load(ptr %table, i32 %base, i32 %index, i32 %extent, i32 %kind, ptr %flags) alwaysinline {
entry:
  %bad = icmp uge i32 %index, %extent
  br i1 %bad, label %out_of_bounds, label %load
out_of_bounds:
  %f0 = load i32, ptr %flags, align 4
  %f1 = or i32 %f0, 2
  store i32 %f1, ptr %flags, align 4
  ret i32 0
load:
  %base64 = zext i32 %base to i64
  %slot = getelementptr inbounds i64, ptr %table, i64 %base64
  %address = load i64, ptr %slot, align 8
  %data = inttoptr i64 %address to ptr
  %index64 = zext i32 %index to i64
  %signed_bit = and i32 %kind, 1
  %unsigned = icmp eq i32 %signed_bit, 0
  %width = and i32 %kind, 6
  switch i32 %width, label %word [ i32 2, label %byte  i32 4, label %half ]
byte:
  %at8 = getelementptr inbounds i8, ptr %data, i64 %index64
  %v8 = load i8, ptr %at8, align 1
  %s8 = sext i8 %v8 to i32
  %z8 = zext i8 %v8 to i32
  %r8 = select i1 %unsigned, i32 %z8, i32 %s8
  ret i32 %r8
half:
  %at16 = getelementptr inbounds i16, ptr %data, i64 %index64
  %v16 = load i16, ptr %at16, align 2
  %s16 = sext i16 %v16 to i32
  %z16 = zext i16 %v16 to i32
  %r16 = select i1 %unsigned, i32 %z16, i32 %s16
  ret i32 %r16
word:
  %at = getelementptr inbounds i32, ptr %data, i64 %index64
  %value = load i32, ptr %at, align 4
  %negative = icmp slt i32 %value, 0
  %big = and i1 %unsigned, %negative
  br i1 %big, label %too_big, label %fine
too_big:
  %g0 = load i32, ptr %flags, align 4
  %g1 = or i32 %g0, 4
  store i32 %g1, ptr %flags, align 4
  ret i32 0
fine:
  ret i32 %value
}

define internal void @wk_job_flag(ptr %flags, i32 %bit) alwaysinline {
  %f0 = load i32, ptr %flags, align 4
  %f1 = or i32 %f0, %bit
  store i32 %f1, ptr %flags, align 4
  ret void
}

; job params (JOB_PARAMS): code (ptr), table (ptr), out (ptr: value, flags), length, axes, points, mode,
; lo[4] (i32), extents[4] (u32). One point: its coordinates, then the bytecode run on them.
define internal i32 @wk_job_point(ptr %p, i32 %point, ptr %flags) alwaysinline {
entry:
  %st = alloca [18 x i32], align 4
  %coord = alloca [4 x i32], align 4
  %pc_v = alloca i32, align 4
  %sp_v = alloca i32, align 4
  %acc_v = alloca i32, align 4
  %msp_v = alloca i32, align 4
  %code = load ptr, ptr %p, align 8
  %table_at = getelementptr inbounds i8, ptr %p, i64 8
  %table = load ptr, ptr %table_at, align 8
  %len_at = getelementptr inbounds i8, ptr %p, i64 24
  %len = load i32, ptr %len_at, align 4
  %axes_at = getelementptr inbounds i8, ptr %p, i64 28
  %axes = load i32, ptr %axes_at, align 4
  %lo_at = getelementptr inbounds i8, ptr %p, i64 40
  %ext_at = getelementptr inbounds i8, ptr %p, i64 56
  store i32 0, ptr %coord, align 4
  %k0 = sub i32 %axes, 1
  br label %coords
coords:
  %k = phi i32 [%k0, %entry], [%k1, %next_axis]
  %rest = phi i32 [%point, %entry], [%rest1, %next_axis]
  %more = icmp sge i32 %k, 0
  br i1 %more, label %next_axis, label %run
next_axis:
  %k64 = sext i32 %k to i64
  %e_at = getelementptr inbounds i32, ptr %ext_at, i64 %k64
  %e = load i32, ptr %e_at, align 4
  %l_at = getelementptr inbounds i32, ptr %lo_at, i64 %k64
  %l = load i32, ptr %l_at, align 4
  %r = urem i32 %rest, %e
  %c = add i32 %l, %r
  %c_at = getelementptr inbounds [4 x i32], ptr %coord, i64 0, i64 %k64
  store i32 %c, ptr %c_at, align 4
  %rest1 = udiv i32 %rest, %e
  %k1 = sub i32 %k, 1
  br label %coords
run:
  store i32 0, ptr %pc_v, align 4
  store i32 0, ptr %sp_v, align 4
  store i32 0, ptr %acc_v, align 4
  store i32 0, ptr %msp_v, align 4
  br label %fetch
fetch:
  %pc = load i32, ptr %pc_v, align 4
  %ended = icmp uge i32 %pc, %len
  br i1 %ended, label %finish, label %decode
decode:
  %pc64 = zext i32 %pc to i64
  %op_at = getelementptr inbounds i32, ptr %code, i64 %pc64
  %op = load i32, ptr %op_at, align 4
  %w1_at = getelementptr inbounds i32, ptr %op_at, i64 1
  %w1 = load i32, ptr %w1_at, align 4
  %w2_at = getelementptr inbounds i32, ptr %op_at, i64 2
  %w2 = load i32, ptr %w2_at, align 4
  %w3_at = getelementptr inbounds i32, ptr %op_at, i64 3
  %w3 = load i32, ptr %w3_at, align 4
  %w4_at = getelementptr inbounds i32, ptr %op_at, i64 4
  %w4 = load i32, ptr %w4_at, align 4
  %sp = load i32, ptr %sp_v, align 4
  %acc = load i32, ptr %acc_v, align 4
  %sp64 = zext i32 %sp to i64
  %top_at = getelementptr inbounds [18 x i32], ptr %st, i64 0, i64 %sp64
  %sp_up = add i32 %sp, 1
  %sp_down = sub i32 %sp, 1
  %below64 = zext i32 %sp_down to i64
  %below_at = getelementptr inbounds [18 x i32], ptr %st, i64 0, i64 %below64
  %axis = and i32 %w1, 3
  %axis64 = zext i32 %axis to i64
  %axis_at = getelementptr inbounds [4 x i32], ptr %coord, i64 0, i64 %axis64
  switch i32 %op, label %bad [
    i32 1, label %op_const
    i32 2, label %op_var
    i32 3, label %op_read
    i32 4, label %op_index
    i32 5, label %op_add
    i32 6, label %op_sub
    i32 7, label %op_mul
    i32 8, label %op_max
    i32 9, label %op_guard
    i32 10, label %op_clamp0
    i32 11, label %op_read_var
    i32 12, label %op_endguard
    i32 13, label %op_floordiv
  ]
op_const:
  store i32 %acc, ptr %top_at, align 4
  store i32 %sp_up, ptr %sp_v, align 4
  store i32 %w1, ptr %acc_v, align 4
  %pc_const = add i32 %pc, 2
  store i32 %pc_const, ptr %pc_v, align 4
  br label %fetch
op_var:
  store i32 %acc, ptr %top_at, align 4
  store i32 %sp_up, ptr %sp_v, align 4
  %var = load i32, ptr %axis_at, align 4
  store i32 %var, ptr %acc_v, align 4
  %pc_var = add i32 %pc, 2
  store i32 %pc_var, ptr %pc_v, align 4
  br label %fetch
op_read_var:
  store i32 %acc, ptr %top_at, align 4
  store i32 %sp_up, ptr %sp_v, align 4
  %rv_index = load i32, ptr %axis_at, align 4
  %rv = call i32 @wk_job_load(ptr %table, i32 %w3, i32 %rv_index, i32 %w2, i32 %w4, ptr %flags)
  store i32 %rv, ptr %acc_v, align 4
  %pc_rv = add i32 %pc, 5
  store i32 %pc_rv, ptr %pc_v, align 4
  br label %fetch
op_index:
  %outside = icmp uge i32 %acc, %w1
  br i1 %outside, label %index_bad, label %index_ok
index_bad:
  call void @wk_job_flag(ptr %flags, i32 2)
  store i32 0, ptr %acc_v, align 4
  br label %index_ok
index_ok:
  %pc_index = add i32 %pc, 2
  store i32 %pc_index, ptr %pc_v, align 4
  br label %fetch
op_read:
  %rd = call i32 @wk_job_load(ptr %table, i32 %w1, i32 %acc, i32 -1, i32 %w2, ptr %flags)
  store i32 %rd, ptr %acc_v, align 4
  %pc_read = add i32 %pc, 3
  store i32 %pc_read, ptr %pc_v, align 4
  br label %fetch
op_add:
  %a_add = load i32, ptr %below_at, align 4
  %add = call {i32, i1} @llvm.sadd.with.overflow.i32(i32 %a_add, i32 %acc)
  br label %arith
op_sub:
  %a_sub = load i32, ptr %below_at, align 4
  %sub = call {i32, i1} @llvm.ssub.with.overflow.i32(i32 %a_sub, i32 %acc)
  br label %arith
op_mul:
  %a_mul = load i32, ptr %below_at, align 4
  %mul = call {i32, i1} @llvm.smul.with.overflow.i32(i32 %a_mul, i32 %acc)
  br label %arith
arith:
  %checked = phi {i32, i1} [%add, %op_add], [%sub, %op_sub], [%mul, %op_mul]
  %value = extractvalue {i32, i1} %checked, 0
  %overflow = extractvalue {i32, i1} %checked, 1
  br i1 %overflow, label %arith_bad, label %arith_ok
arith_bad:
  call void @wk_job_flag(ptr %flags, i32 1)
  br label %arith_ok
arith_ok:
  store i32 %value, ptr %acc_v, align 4
  store i32 %sp_down, ptr %sp_v, align 4
  %pc_arith = add i32 %pc, 1
  store i32 %pc_arith, ptr %pc_v, align 4
  br label %fetch
op_max:
  %a_max = load i32, ptr %below_at, align 4
  %max = call i32 @llvm.smax.i32(i32 %a_max, i32 %acc)
  store i32 %max, ptr %acc_v, align 4
  store i32 %sp_down, ptr %sp_v, align 4
  %pc_max = add i32 %pc, 1
  store i32 %pc_max, ptr %pc_v, align 4
  br label %fetch
op_clamp0:
  %clamped = call i32 @llvm.smax.i32(i32 %acc, i32 0)
  store i32 %clamped, ptr %acc_v, align 4
  %pc_clamp = add i32 %pc, 1
  store i32 %pc_clamp, ptr %pc_v, align 4
  br label %fetch
op_floordiv:                   ; d (a constant >= 1): floor(acc / d), truncation one lower when inexact below 0
  %fd_q = sdiv i32 %acc, %w1
  %fd_back = mul i32 %fd_q, %w1
  %fd_inexact = icmp ne i32 %fd_back, %acc
  %fd_negative = icmp slt i32 %acc, 0
  %fd_down = and i1 %fd_inexact, %fd_negative
  %fd_step = zext i1 %fd_down to i32
  %fd = sub i32 %fd_q, %fd_step
  store i32 %fd, ptr %acc_v, align 4
  %pc_fd = add i32 %pc, 2
  store i32 %pc_fd, ptr %pc_v, align 4
  br label %fetch
op_guard:                      ; axis skip: points whose coordinate is outside [below, acc) skip the body
  %g_value = load i32, ptr %axis_at, align 4
  %g_begin = load i32, ptr %below_at, align 4
  %g_after = icmp sle i32 %g_begin, %g_value
  %g_before = icmp slt i32 %g_value, %acc
  %inside = and i1 %g_after, %g_before
  %msp = load i32, ptr %msp_v, align 4
  %room = icmp ult i32 %msp, 8
  %enter = and i1 %inside, %room
  br i1 %enter, label %guard_in, label %guard_skip
guard_in:
  %msp_up = add i32 %msp, 1
  store i32 %msp_up, ptr %msp_v, align 4
  %sp_two = sub i32 %sp, 2
  store i32 %sp_two, ptr %sp_v, align 4
  %restored64 = zext i32 %sp_two to i64
  %restored_at = getelementptr inbounds [18 x i32], ptr %st, i64 0, i64 %restored64
  %restored = load i32, ptr %restored_at, align 4
  store i32 %restored, ptr %acc_v, align 4
  %pc_guard = add i32 %pc, 3
  store i32 %pc_guard, ptr %pc_v, align 4
  br label %fetch
guard_skip:
  br i1 %room, label %guard_skip_ok, label %guard_deep
guard_deep:
  call void @wk_job_flag(ptr %flags, i32 1)
  br label %guard_skip_ok
guard_skip_ok:
  store i32 %sp_down, ptr %sp_v, align 4
  store i32 0, ptr %acc_v, align 4
  store i32 %w2, ptr %pc_v, align 4
  br label %fetch
op_endguard:
  %ended_value = call i32 @llvm.smax.i32(i32 %acc, i32 0)
  store i32 %ended_value, ptr %acc_v, align 4
  %msp_e = load i32, ptr %msp_v, align 4
  %msp_down = sub i32 %msp_e, 1
  store i32 %msp_down, ptr %msp_v, align 4
  %pc_end = add i32 %pc, 1
  store i32 %pc_end, ptr %pc_v, align 4
  br label %fetch
bad:
  call void @wk_job_flag(ptr %flags, i32 1)
  store i32 %len, ptr %pc_v, align 4
  br label %fetch
finish:
  %result = load i32, ptr %acc_v, align 4
  ret i32 %result
}

define void @wk_job_range(ptr %p, i64 %first, i64 %stride) alwaysinline {
entry:
  %flags = alloca i32, align 4
  store i32 0, ptr %flags, align 4
  %out_at = getelementptr inbounds i8, ptr %p, i64 16
  %out = load ptr, ptr %out_at, align 8
  %points_at = getelementptr inbounds i8, ptr %p, i64 32
  %points32 = load i32, ptr %points_at, align 4
  %points = zext i32 %points32 to i64
  %mode_at = getelementptr inbounds i8, ptr %p, i64 36
  %mode = load i32, ptr %mode_at, align 4
  %value_mode = icmp eq i32 %mode, 1
  br label %loop
loop:
  %i = phi i64 [%first, %entry], [%next, %step]
  %best = phi i32 [0, %entry], [%best1, %step]
  %more = icmp ult i64 %i, %points
  br i1 %more, label %body, label %done
body:
  %point = trunc i64 %i to i32
  %value = call i32 @wk_job_point(ptr %p, i32 %point, ptr %flags)
  br i1 %value_mode, label %store_value, label %fold
store_value:
  store i32 %value, ptr %out, align 4
  br label %step
fold:
  %positive = call i32 @llvm.smax.i32(i32 %value, i32 0)
  %folded = call i32 @llvm.umax.i32(i32 %best, i32 %positive)
  br label %step
step:
  %best1 = phi i32 [%best, %store_value], [%folded, %fold]
  %next = add i64 %i, %stride
  br label %loop
done:
  %any = icmp ne i32 %best, 0
  br i1 %any, label %publish, label %flags_out
publish:
  %old = atomicrmw umax ptr %out, i32 %best monotonic, align 4
  br label %flags_out
flags_out:
  %f = load i32, ptr %flags, align 4
  %flagged = icmp ne i32 %f, 0
  br i1 %flagged, label %flag_publish, label %exit
flag_publish:
  %flag_at = getelementptr inbounds i32, ptr %out, i64 1
  %old_flags = atomicrmw or ptr %flag_at, i32 %f monotonic, align 4
  br label %exit
exit:
  ret void
}
