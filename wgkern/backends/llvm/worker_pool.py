"""The native CPU thread pool: workers park inside one JIT-compiled loop; `wk_parallel_for` posts a job.

Python starts the workers once (daemon threads, each one CFUNCTYPE call that never returns until shutdown).
A job is {fn, args, lo, hi, chunk, nchunks}; `next` packs (generation << 32 | next chunk) so a chunk is
claimed by one compare-exchange that also proves the job is still current. The caller takes chunks too, then
waits for `done == nchunks`: it spins briefly, then sleeps on a futex that the thread finishing the job's last
chunk wakes (elsewhere it yields), so a caller whose last chunk runs on a preempted worker leaves the CPU to it.
Idle workers spin briefly, then sleep on a futex (usleep elsewhere).
Ranges below two chunks, or launched while another launch holds the pool, run inline on the caller. Posting a
job first closes the previous one (an empty generation of its own), so no worker can claim a chunk of the
new job under the old generation."""
from __future__ import annotations

import atexit
import ctypes
import os
import threading
import time

from .jit import add_symbol, compile_ir, function_address
from .target import CPU_TARGET, Target

# Spin-wait hints before a worker sleeps on the futex (x86 `pause` measured 38 ns on an AMD EPYC: 2000 are
# about 80 us): longer than the Python path between two launches, so back-to-back launches find the workers
# awake; spinning much longer burns CPU time that the caller and other processes need on a loaded machine
# (20000 measured 1.3-1.7x slower on DiffTaichi's diffmpm_checkpointing with two shared cores, no faster on
# two idle ones).
SPIN_ITERATIONS = 2000
WAIT_SPINS_BEFORE_SLEEP = 4096  # caller spins before it sleeps while waiting for the last chunks

_POOL_IR = r"""
; wgkern CPU worker pool
@pool.next = internal global i64 0, align 64
@pool.done = internal global i64 0, align 64
@pool.gen32 = internal global i32 0, align 64
@pool.sleepers = internal global i32 0, align 64
@pool.workers = internal global i32 0, align 64
@pool.stop = internal global i32 0, align 64
@pool.lock = internal global i32 0, align 64
@pool.generation = internal global i32 0, align 64
@pool.finished = internal global i32 0, align 64
@pool.caller_waiting = internal global i32 0, align 64
@pool.caller_sleeps = internal global i64 0
@pool.fn = internal global ptr null, align 64
@pool.args = internal global ptr null
@pool.lo = internal global i64 0
@pool.hi = internal global i64 0
@pool.chunk = internal global i64 0
@pool.nchunks = internal global i64 0

declare i32 @sched_yield() nounwind
declare i32 @usleep(i32) nounwind
declare i64 @syscall(i64, ...) nounwind
{spin_decl}

define internal void @pool.spin_hint() nounwind alwaysinline {{
  {spin_call}
  ret void
}}

define internal void @pool.sleep(i32 %seen) nounwind {{
  {sleep_body}
  ret void
}}

define internal void @pool.wake_all() nounwind {{
  {wake_body}
  ret void
}}

define internal void @pool.caller_sleep(i32 %seen) nounwind {{
  {caller_sleep_body}
  ret void
}}

define internal void @pool.wake_caller() nounwind {{
  {caller_wake_body}
  ret void
}}

; Claim and run chunks of job generation %gen until none is left or the job changed.
define internal void @pool.work(i32 %gen, i32 %worker) nounwind {{
entry:
  br label %claim
claim:
  %cur = load atomic i64, ptr @pool.next seq_cst, align 8
  %cur_gen64 = lshr i64 %cur, 32
  %cur_gen = trunc i64 %cur_gen64 to i32
  %same = icmp eq i32 %cur_gen, %gen
  br i1 %same, label %check, label %out
check:
  %index = and i64 %cur, 4294967295
  %nchunks = load atomic i64, ptr @pool.nchunks monotonic, align 8
  %more = icmp ult i64 %index, %nchunks
  br i1 %more, label %take, label %out
take:
  %fn = load atomic ptr, ptr @pool.fn monotonic, align 8
  %args = load atomic ptr, ptr @pool.args monotonic, align 8
  %lo = load atomic i64, ptr @pool.lo monotonic, align 8
  %hi = load atomic i64, ptr @pool.hi monotonic, align 8
  %chunk = load atomic i64, ptr @pool.chunk monotonic, align 8
  %claimed = add i64 %cur, 1
  %pair = cmpxchg ptr @pool.next, i64 %cur, i64 %claimed seq_cst seq_cst
  %won = extractvalue {{ i64, i1 }} %pair, 1
  br i1 %won, label %run, label %claim
run:
  %offset = mul i64 %index, %chunk
  %begin = add i64 %lo, %offset
  %end_unclamped = add i64 %begin, %chunk
  %past = icmp sgt i64 %end_unclamped, %hi
  %end = select i1 %past, i64 %hi, i64 %end_unclamped
  call void %fn(ptr %args, i64 %begin, i64 %end, i32 %worker)
  %prior = atomicrmw add ptr @pool.done, i64 1 seq_cst
  %now = add i64 %prior, 1
  %last = icmp eq i64 %now, %nchunks
  br i1 %last, label %finish, label %claim
finish:
  ; The job's last chunk: tell a caller asleep in wk_parallel_for (it reads `finished` after announcing it
  ; waits, this thread reads `caller_waiting` after storing `finished`: one of the two sees the other).
  store atomic i32 %gen, ptr @pool.finished seq_cst, align 4
  %waiting = load atomic i32, ptr @pool.caller_waiting seq_cst, align 4
  %asleep = icmp ne i32 %waiting, 0
  br i1 %asleep, label %wake_caller, label %claim
wake_caller:
  call void @pool.wake_caller()
  br label %claim
out:
  ret void
}}

; The loop every worker thread parks in until wk_pool_stop().
define void @wk_pool_worker() nounwind {{
entry:
  %seen = alloca i32
  %spins = alloca i32
  %r0 = atomicrmw add ptr @pool.workers, i32 1 seq_cst
  %index = add i32 %r0, 1
  %g0 = load atomic i32, ptr @pool.gen32 seq_cst, align 4
  store i32 %g0, ptr %seen
  br label %wait
wait:
  store i32 0, ptr %spins
  br label %spin
spin:
  %stop = load atomic i32, ptr @pool.stop monotonic, align 4
  %stopping = icmp ne i32 %stop, 0
  br i1 %stopping, label %exit, label %poll
poll:
  %cur = load atomic i64, ptr @pool.next seq_cst, align 8
  %cur_gen64 = lshr i64 %cur, 32
  %cur_gen = trunc i64 %cur_gen64 to i32
  %old = load i32, ptr %seen
  %fresh = icmp ne i32 %cur_gen, %old
  br i1 %fresh, label %work, label %idle
idle:
  %n = load i32, ptr %spins
  %n1 = add i32 %n, 1
  store i32 %n1, ptr %spins
  %keep_spinning = icmp slt i32 %n, {spin_iterations}
  br i1 %keep_spinning, label %pause, label %sleep
pause:
  call void @pool.spin_hint()
  br label %spin
sleep:
  %r1 = atomicrmw add ptr @pool.sleepers, i32 1 seq_cst
  %g = load atomic i32, ptr @pool.gen32 seq_cst, align 4
  %stop2 = load atomic i32, ptr @pool.stop seq_cst, align 4
  %unchanged = icmp eq i32 %g, %old
  %running = icmp eq i32 %stop2, 0
  %should_sleep = and i1 %unchanged, %running
  br i1 %should_sleep, label %do_sleep, label %woken
do_sleep:
  call void @pool.sleep(i32 %old)
  br label %woken
woken:
  %r2 = atomicrmw sub ptr @pool.sleepers, i32 1 seq_cst
  br label %wait
work:
  store i32 %cur_gen, ptr %seen
  call void @pool.work(i32 %cur_gen, i32 %index)
  br label %wait
exit:
  %r3 = atomicrmw sub ptr @pool.workers, i32 1 seq_cst
  ret void
}}

; Run fn(args, i, j) over [lo, hi) in chunks of at least %grain indices, on the workers and this thread.
define void @wk_parallel_for(ptr %fn, ptr %args, i64 %lo, i64 %hi, i64 %grain) nounwind {{
entry:
  %n = sub i64 %hi, %lo
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %return, label %decide
decide:
  %workers = load atomic i32, ptr @pool.workers monotonic, align 4
  %no_workers = icmp sle i32 %workers, 0
  %two_grains = shl i64 %grain, 1
  %small = icmp slt i64 %n, %two_grains
  %inline_ = or i1 %no_workers, %small
  br i1 %inline_, label %inline, label %try_lock
inline:
  call void %fn(ptr %args, i64 %lo, i64 %hi, i32 0)
  br label %return
try_lock:
  %pair = cmpxchg ptr @pool.lock, i32 0, i32 1 acquire monotonic
  %locked = extractvalue {{ i32, i1 }} %pair, 1
  br i1 %locked, label %post, label %inline
post:
  %threads32 = add i32 %workers, 1
  %threads = zext i32 %threads32 to i64
  %pieces = mul i64 %threads, 4
  %pieces_m1 = sub i64 %pieces, 1
  %rounded = add i64 %n, %pieces_m1
  %even = udiv i64 %rounded, %pieces
  %grain_wins = icmp ugt i64 %grain, %even
  %chunk = select i1 %grain_wins, i64 %grain, i64 %even
  %chunk_m1 = sub i64 %chunk, 1
  %n_up = add i64 %n, %chunk_m1
  %nchunks = udiv i64 %n_up, %chunk
  ; Close the old job before touching its parameters: a worker that read the old `next` and then the new
  ; nchunks must fail its claim (its compare-exchange expects the old `next`), or it would run a chunk of
  ; the new job on top of everyone else (seen on 16 cores: indices run twice).
  ; The closed state has a generation of its own (the job's minus one), so a worker that looks while it is
  ; closed finds nothing and still sees the job's generation as new once it is posted.
  %previous = load i32, ptr @pool.generation
  %closing = add i32 %previous, 1
  %gen = add i32 %previous, 2
  store i32 %gen, ptr @pool.generation
  %closing64 = zext i32 %closing to i64
  %closing_next = shl i64 %closing64, 32
  %closed = or i64 %closing_next, 4294967295
  store atomic i64 %closed, ptr @pool.next seq_cst, align 8
  %gen64 = zext i32 %gen to i64
  %next0 = shl i64 %gen64, 32
  store atomic ptr %fn, ptr @pool.fn monotonic, align 8
  store atomic ptr %args, ptr @pool.args monotonic, align 8
  store atomic i64 %lo, ptr @pool.lo monotonic, align 8
  store atomic i64 %hi, ptr @pool.hi monotonic, align 8
  store atomic i64 %chunk, ptr @pool.chunk monotonic, align 8
  store atomic i64 %nchunks, ptr @pool.nchunks monotonic, align 8
  store atomic i64 0, ptr @pool.done monotonic, align 8
  store atomic i64 %next0, ptr @pool.next seq_cst, align 8
  store atomic i32 %gen, ptr @pool.gen32 seq_cst, align 4
  %sleepers = load atomic i32, ptr @pool.sleepers seq_cst, align 4
  %any_asleep = icmp sgt i32 %sleepers, 0
  br i1 %any_asleep, label %wake, label %participate
wake:
  call void @pool.wake_all()
  br label %participate
participate:
  call void @pool.work(i32 %gen, i32 0)
  br label %wait
wait:
  %spin = phi i32 [0, %participate], [%spin1, %hint], [0, %awake]
  %done = load atomic i64, ptr @pool.done seq_cst, align 8
  %finished = icmp uge i64 %done, %nchunks
  br i1 %finished, label %unlock, label %wait_more
wait_more:
  %spin1 = add i32 %spin, 1
  %sleep_now = icmp sgt i32 %spin, {wait_spins}
  br i1 %sleep_now, label %announce, label %hint
hint:
  call void @pool.spin_hint()
  br label %wait
announce:
  ; Sleep until the thread that finishes the last chunk wakes this one: a thread running another chunk may
  ; have been preempted, and a caller that spins or yields meanwhile only delays it on a busy machine.
  store atomic i32 1, ptr @pool.caller_waiting seq_cst, align 4
  %seen = load atomic i32, ptr @pool.finished seq_cst, align 4
  %over = icmp eq i32 %seen, %gen
  br i1 %over, label %awake, label %block
block:
  %counted = atomicrmw add ptr @pool.caller_sleeps, i64 1 monotonic
  call void @pool.caller_sleep(i32 %seen)
  br label %awake
awake:
  store atomic i32 0, ptr @pool.caller_waiting seq_cst, align 4
  br label %wait
unlock:
  store atomic i32 0, ptr @pool.lock release, align 4
  br label %return
return:
  ret void
}}

; Tell every worker to leave its loop: a new, empty job generation wakes sleepers and spinners alike.
define void @wk_pool_stop() nounwind {{
entry:
  br label %lock
lock:
  %pair = cmpxchg ptr @pool.lock, i32 0, i32 1 acquire monotonic
  %locked = extractvalue {{ i32, i1 }} %pair, 1
  br i1 %locked, label %post, label %retry
retry:
  %y = call i32 @sched_yield()
  br label %lock
post:
  store atomic i32 1, ptr @pool.stop seq_cst, align 4
  store atomic i64 0, ptr @pool.nchunks seq_cst, align 8
  %previous = load i32, ptr @pool.generation
  %gen = add i32 %previous, 1
  store i32 %gen, ptr @pool.generation
  %gen64 = zext i32 %gen to i64
  %next0 = shl i64 %gen64, 32
  store atomic i64 %next0, ptr @pool.next seq_cst, align 8
  store atomic i32 %gen, ptr @pool.gen32 seq_cst, align 4
  call void @pool.wake_all()
  store atomic i32 0, ptr @pool.lock release, align 4
  ret void
}}

define void @wk_pool_reset() nounwind {{
  store atomic i32 0, ptr @pool.stop seq_cst, align 4
  ret void
}}

define i64 @wk_pool_caller_sleeps() nounwind {{
  %n = load atomic i64, ptr @pool.caller_sleeps monotonic, align 8
  ret i64 %n
}}

define i32 @wk_pool_workers() nounwind {{
  %w = load atomic i32, ptr @pool.workers seq_cst, align 4
  ret i32 %w
}}
"""

_FUTEX_WAIT_PRIVATE = 128
_FUTEX_WAKE_PRIVATE = 129


def pool_ir(target: Target) -> str:
    """The pool module's text for `target`: futex sleep on Linux, usleep polling elsewhere."""
    spin_call, spin_decl = target.spin_hint()
    futex = target.futex_syscall_number()
    if futex is None:
        sleep_body = "%s = call i32 @usleep(i32 100)"
        wake_body = ""
        caller_sleep_body = "%s = call i32 @sched_yield()"
        caller_wake_body = ""
    else:
        sleep_body, wake_body = _futex_pair(futex, "@pool.gen32", "2147483647")
        caller_sleep_body, caller_wake_body = _futex_pair(futex, "@pool.finished", "1")
    return _POOL_IR.format(spin_decl=spin_decl, spin_call=spin_call, sleep_body=sleep_body, wake_body=wake_body,
                           caller_sleep_body=caller_sleep_body, caller_wake_body=caller_wake_body,
                           spin_iterations=SPIN_ITERATIONS, wait_spins=WAIT_SPINS_BEFORE_SLEEP)


def _futex_pair(futex: int, word: str, wakes: str) -> tuple[str, str]:
    """(wait, wake) bodies on the i32 `word`: the wait returns at once unless the word still holds %seen."""
    wait = (f"%expected = zext i32 %seen to i64\n  %s = call i64 (i64, ...) @syscall(i64 {futex}, "
            f"ptr {word}, i64 {_FUTEX_WAIT_PRIVATE}, i64 %expected, ptr null)")
    wake = f"%s = call i64 (i64, ...) @syscall(i64 {futex}, ptr {word}, i64 {_FUTEX_WAKE_PRIVATE}, i64 {wakes})"
    return wait, wake


def default_thread_count() -> int:
    """Threads including the caller: the CPUs this process may run on (os.cpu_count() where unknown)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class WorkerPool:
    """The process's native pool. `start(threads)` launches threads-1 workers; `stop()` joins them.
    Backends share it through `acquire`/`release`: the workers stop when the last user releases."""

    def __init__(self, target: Target = CPU_TARGET):
        compile_ir(pool_ir(target))
        add_symbol("wk_parallel_for", function_address("wk_parallel_for"))
        void = ctypes.CFUNCTYPE(None)
        self.worker_loop = void(function_address("wk_pool_worker"))
        self.native_stop = void(function_address("wk_pool_stop"))
        self.native_reset = void(function_address("wk_pool_reset"))
        self.native_workers = ctypes.CFUNCTYPE(ctypes.c_int32)(function_address("wk_pool_workers"))
        self.native_caller_sleeps = ctypes.CFUNCTYPE(ctypes.c_int64)(function_address("wk_pool_caller_sleeps"))
        self.threads: list[threading.Thread] = []
        self.lock = threading.RLock()
        self.users = 0

    def acquire(self, threads: int | None = None) -> None:
        with self.lock:
            self.users += 1
            self.start(threads)

    def release(self) -> None:
        with self.lock:
            self.users = max(0, self.users - 1)
            if self.users == 0:
                self.stop()

    def start(self, threads: int | None = None) -> None:
        """Ensure `threads - 1` workers are parked (the launching thread is the last one)."""
        with self.lock:
            if self.threads:
                return
            count = (threads or default_thread_count()) - 1
            self.native_reset()
            for index in range(count):
                thread = threading.Thread(target=self.worker_loop, name=f"wgkern-cpu-{index}", daemon=True)
                thread.start()
                self.threads.append(thread)
            deadline = time.monotonic() + 2.0
            while self.worker_count() < count and time.monotonic() < deadline:
                time.sleep(0.0005)

    def worker_count(self) -> int:
        """Workers currently inside the native loop."""
        return int(self.native_workers())

    def caller_sleeps(self) -> int:
        """How often a launching thread slept until other threads finished its job's last chunks."""
        return int(self.native_caller_sleeps())

    def stop(self, timeout: float = 5.0) -> None:
        with self.lock:
            if not self.threads:
                return
            self.native_stop()
            for thread in self.threads:
                thread.join(timeout)
            self.threads = []


_POOL: WorkerPool | None = None
_POOL_LOCK = threading.Lock()


def worker_pool() -> WorkerPool:
    """The process-wide pool (its native module is compiled once per process)."""
    global _POOL  # noqa: PLW0603 - one native pool per process
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = WorkerPool()
            atexit.register(_POOL.stop, 1.0)
        return _POOL
