"""The CPU kernels' thread pool: kernel_abi.PARALLEL_FOR(fn, env, max_chunks, threads) runs
fn(env, c, n) for c = 0..n-1, where fn accepts any chunk count n <= max_chunks (the parallel
loop's extent) and the pool picks n, on up to `threads` threads: the calling thread and
persistent workers (started on first use).

Kernels compiled with Target.threads > 1 call this symbol for their parallel loops; it is
machine code built here, once per process, from LLVM IR (pthread calls, atomics, sched_yield
and the CPU's spin-wait hint), and registered with LLVM so every kernel object loaded
afterwards links against it. (A shared object linked for a board carries its own copy,
compiled from the same IR; cpu_kernel.load_shared resets its state after a fork.) Reusing
threads saves the tens of microseconds a pthread_create/join pair costs on every call.
(kernel_abi.PARALLEL_FOR_LEGACY(fn, env, n), the entry of objects compiled before chunks
existed, stays: n chunks on n threads.)

Tasks are not threads. A loop is cut into CHUNKS_PER_THREAD chunks per thread, and threads
(the caller included) claim chunks one at a time from a shared word; the caller waits only for
chunks a worker has claimed and not yet finished. A static split (chunk k to thread k) is as
fast on an idle machine but collapses when another process takes a core: a descheduled worker
keeps its half and the caller waits, a scheduler slice (milliseconds) at a time, for it to run
again. Here the caller runs whatever a late worker has not claimed; only a worker descheduled
in the middle of a chunk still makes it wait. Smaller chunks would balance a worker that
arrives late better but cost an atomic claim each and cut a convolution's rows more finely;
1 to 16 per thread measured alike, and four keeps the idle speed.

The caller claims chunks from the front, the helpers from the back. On an idle machine the
caller so runs about the first half of every loop and the worker the second, the same
iterations call after call: a convolution's weights for its half of the output channels stay
in that core's L2, and a depthwise convolution's first channel blocks are read on the core
that wrote them (its producer's first half). Claimed in order by whichever thread came first,
the halves moved between cores each call; on MobileNetV2's 1x1 convolutions called back to
back (Zen 3, 2 vCPUs) two threads gained 1.50-1.78x that way and 1.90-2.00x with the
two-ended claims (the model's 1x1 convolutions in a run: 3.56 to 3.38 ms).

Waits spin, then sleep. A worker polls the claim word, and the caller polls the count of
finished chunks, for SPIN_ROUNDS rounds before falling back to condition variables. Waking a
sleeping thread crosses to another (virtual) CPU; on the 2-vCPU machines we measure on that
costs 40-45 us each way, more than a whole 1x1 convolution of MobileNetV2 takes; with the spin
a call costs about 1 us, and a worker still spinning from the previous kernel starts on the
next at once. Every YIELD_EVERY-th round is a sched_yield instead of the pause hint: when the
scheduler has put the caller and a worker on one core (another process holding the other), a
pure spin burns the time the thread it waits for needs; the yield hands it over, and on an
otherwise idle core it returns at once.

Measured on 2 vCPUs (Zen 4, Linux 6.18), MobileNetV2 with 2 threads over 1 thread: idle 0.59
(as the static split); with a process spinning on one core 0.97-0.99, where the static split
took 3.3x (13.5 against 4.0 ms) and onnxruntime's own ratio is 0.95-1.05. Without the yields
that was 1.30, with workers that sleep at once instead of spinning 1.08 (and 0.86 idle). The
second thread gains little under such load because the scheduler gives the busy process that
core in slices longer than a kernel: the worker mostly arrives after the caller has claimed
every chunk (it ran 0.03 s of a 2 s run), and claiming per chunk makes that cost nothing.

The claim word packs (generation << 32 | helper slots << 24 | chunks claimed from the front
<< 12 | unclaimed chunks). A claim is one compare-and-swap, so a worker that read the word of a
finished loop cannot claim a chunk of the next one (the generation differs); a worker's first
claim of a loop also takes one of its threads - 1 helper slots, so a loop never runs on more
threads than asked for.

A loop whose threads carry kernel_abi.WARM_POOL_ONLY (one too small to repay a wake-up) runs on
the calling thread while a worker sleeps or none has been started: the wake-up would cost the
caller more than the worker could save it. (A worker's vCPU that has idled for milliseconds
can take 1.6-2.7 ms to wake on the Zen 3 VMs, 35-50 us after 1 ms: so the first loops of a run
after a pause run on the caller alone, whatever their size.)

A call that finds the pool busy (another caller's loop, or a loop nested in one of its chunks)
runs all of its iterations on the calling thread: waiting for the pool would deadlock when
nested and idle a thread that can do the work itself when concurrent.
"""
from __future__ import annotations

import threading

from . import kernel_abi

_lock = threading.Lock()
_engine = None
SYMBOL_PREFIX = "vdla_"   # of the pool's own globals (STATE)
MAX_WORKERS = kernel_abi.MAX_THREADS - 1   # the caller is the other thread
CHUNKS_PER_THREAD = 4
# ROUSE(): wake sleeping workers to spin ahead of a run's first parallel loop (Executor.run calls
# it before binding the inputs, whose copies then hide the 40-45 us wake-up the loop would wait for)
ROUSE = SYMBOL_PREFIX + "pool_rouse"
_rouse = None
SYNC_BYTES = 64          # >= sizeof(pthread_mutex_t), sizeof(pthread_cond_t) on glibc targets
SPIN_ROUNDS = 4096       # rounds before a wait sleeps: 0.1-0.2 ms on the Zen 4 hosts
YIELD_EVERY = 32         # (a power of two) one round in this many is a sched_yield, the others a pause

# The claim word's fields (see the docstring); a loop has at most 64 * CHUNKS_PER_THREAD chunks.
FRONT_SHIFT, HELPER_SHIFT, GEN_SHIFT = 12, 24, 32
CHUNK_MASK, FRONT_MASK = (1 << FRONT_SHIFT) - 1, (1 << (HELPER_SHIFT - FRONT_SHIFT)) - 1
HELPER_MASK = (1 << (GEN_SHIFT - HELPER_SHIFT)) - 1
assert kernel_abi.MAX_THREADS * CHUNKS_PER_THREAD <= CHUNK_MASK, "a loop's chunks must fit the claim word's fields"


def _pause_hint(arch: str):
    """The spin-wait hint of `arch` as (intrinsic, arguments): x86 `pause`, Arm `yield`
    (hint #1); None where there is none."""
    if arch.startswith(("x86", "i386", "i686", "amd64")):
        return "llvm.x86.sse2.pause", []
    if arch.startswith(("aarch64", "arm64")):
        return "llvm.aarch64.hint", [1]
    if arch.startswith(("arm", "thumb")):
        return "llvm.arm.hint", [1]
    return None


class _PoolIR:
    """The pool's globals, the libc functions it calls, and emitters of its wait loops."""

    def __init__(self, ptr_bits: int, arch: str):
        import llvmlite.ir.types
        from llvmlite import ir
        llvmlite.ir.types.ir_layer_typed_pointers_enabled = False
        self.ir = ir
        self.i32, self.i64 = ir.IntType(32), ir.IntType(64)
        self.iptr = ir.IntType(ptr_bits)
        self.ptr = ir.PointerType()
        self.void = ir.VoidType()
        self.m = ir.Module("vdla_thread_pool")
        sync_t = ir.ArrayType(ir.IntType(8), SYNC_BYTES)
        i64, ptr = self.i64, self.ptr
        self.mutex = self._global("pool_mutex", sync_t)          # guards the sleeps below
        self.launch = self._global("pool_launch_mutex", sync_t)  # one loop at a time
        self.work_cv = self._global("pool_work_cv", sync_t)
        self.done_cv = self._global("pool_done_cv", sync_t)
        self.word = self._global("pool_claim_word", i64)         # gen | helper slots | chunks
        self.finished = self._global("pool_finished", i64)       # chunks of this loop done
        self.sleepers = self._global("pool_sleepers", i64)       # workers asleep on work_cv
        self.waiting = self._global("pool_caller_waiting", i64)  # the caller asleep on done_cv
        self.gen = self._global("pool_generation", i64)          # the caller's, under `launch`
        self.started = self._global("pool_started", i64)         # under `launch`
        self.fn = self._global("pool_fn", ptr)                   # the loop's, set before the
        self.env = self._global("pool_env", ptr)                 # word is published and
        self.nchunks = self._global("pool_nchunks", i64)         # stable until it finishes
        self.rousals = self._global("pool_rousals", i64)         # ROUSE calls so far
        i32, iptr = self.i32, self.iptr
        self.lock = self._extern("pthread_mutex_lock", i32, [ptr])
        self.trylock = self._extern("pthread_mutex_trylock", i32, [ptr])
        self.unlock = self._extern("pthread_mutex_unlock", i32, [ptr])
        self.cond_wait = self._extern("pthread_cond_wait", i32, [ptr, ptr])
        self.signal = self._extern("pthread_cond_signal", i32, [ptr])
        self.broadcast = self._extern("pthread_cond_broadcast", i32, [ptr])
        self.create = self._extern("pthread_create", i32, [ptr, ptr, ptr, ptr])
        self.detach = self._extern("pthread_detach", i32, [iptr])
        self.sched_yield = self._extern("sched_yield", i32, [])
        hint = _pause_hint(arch)
        self.hint = None
        if hint:
            self.hint = (self._extern(hint[0], self.void, [i32] * len(hint[1])),
                         [ir.Constant(i32, a) for a in hint[1]])
        self.abi = {"void": self.void, "i32": i32, "i64": i64, "ptr": ptr}   # kernel_abi's spellings
        self.task_t = self.abi_function_type(kernel_abi.TASK_SIGNATURE)
        # typed with the function type: llvmlite reads an indirect callee's signature from it
        # (it still prints as an opaque "ptr")
        self.task_ptr = ir.PointerType(self.task_t)

    def abi_function_type(self, signature):
        result, params = signature
        return self.ir.FunctionType(self.abi[result], [self.abi[t] for t in params])

    def entry(self, name, signature):
        """An entry point of kernel_abi's `signature`; its first parameter, the task, typed
        with task_t."""
        result, params = signature
        types = [self.task_ptr] + [self.abi[t] for t in params[1:]]
        return self.ir.Function(self.m, self.ir.FunctionType(self.abi[result], types), name=name)

    def _global(self, name, typ):
        g = self.ir.GlobalVariable(self.m, typ, name=SYMBOL_PREFIX + name)
        g.initializer = self.ir.Constant(typ, None)
        g.align = 16
        g.type = self.ptr
        return g

    def _extern(self, name, ret, args):
        return self.ir.Function(self.m, self.ir.FunctionType(ret, args), name=name)

    def c(self, v):
        return self.ir.Constant(self.i64, v)

    def load(self, b, g):
        # seq_cst throughout: a sleeper counts itself and then reads the condition while a
        # waker changes the condition and then reads the count; both orders must hold
        return b.load_atomic(g, "seq_cst", 8, typ=self.i64)

    def store(self, b, g, v):
        # an exchange, not an atomic store: llvmlite's store_atomic needs typed pointers
        b.atomic_rmw("xchg", g, v, "seq_cst")

    def notify(self, b, cond_fn, cv):
        """Emit: with the mutex, cond_fn (signal or broadcast) on cv."""
        b.call(self.lock, [self.mutex])
        b.call(cond_fn, [cv])
        b.call(self.unlock, [self.mutex])

    def field(self, b, w, shift, mask):
        return b.and_(b.lshr(w, self.c(shift)), self.c(mask))

    def spin_until(self, b, ready, name):
        """Emit: up to SPIN_ROUNDS rounds of `ready(b)` (an i1), a pause hint or, every
        YIELD_EVERY-th round, a sched_yield between. Returns (block reached when ready, block
        reached when the rounds ran out)."""
        ir, i32 = self.ir, self.i32
        head, body = b.append_basic_block(name + "_spin"), b.append_basic_block(name + "_pause")
        yld, nxt = b.append_basic_block(name + "_yield"), b.append_basic_block(name + "_next")
        hit, miss = b.append_basic_block(name + "_ready"), b.append_basic_block(name + "_sleep")
        pre = b.block
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(i32)
        k.add_incoming(ir.Constant(i32, 0), pre)
        b.cbranch(ready(b), hit, body)
        b.position_at_end(body)
        k1 = b.add(k, ir.Constant(i32, 1))
        b.cbranch(b.icmp_unsigned("==", b.and_(k1, ir.Constant(i32, YIELD_EVERY - 1)),
                                  ir.Constant(i32, 0)), yld, nxt)
        b.position_at_end(yld)
        b.call(self.sched_yield, [])
        b.branch(nxt)
        b.position_at_end(nxt)
        if self.hint:
            b.call(self.hint[0], self.hint[1])
        k.add_incoming(k1, nxt)
        b.cbranch(b.icmp_signed("<", k1, ir.Constant(i32, SPIN_ROUNDS)), head, miss)
        return hit, miss

    def sleep_until(self, b, cv, flag, ready, name):
        """Emit: with the mutex, count this thread in `flag`, cond_wait on cv until ready(b)
        (an i1, read after the count, so a waker that changes the condition and then reads
        `flag` cannot miss the sleeper), uncount it."""
        b.call(self.lock, [self.mutex])
        b.atomic_rmw("add", flag, self.c(1), "seq_cst")
        head, sleep, done = (b.append_basic_block(f"{name}_{x}") for x in ("check", "wait", "done"))
        b.branch(head)
        b.position_at_end(head)
        b.cbranch(ready(b), done, sleep)
        b.position_at_end(sleep)
        b.call(self.cond_wait, [cv, self.mutex])
        b.branch(head)
        b.position_at_end(done)
        b.atomic_rmw("sub", flag, self.c(1), "seq_cst")
        b.call(self.unlock, [self.mutex])


def _emit_run_chunks(p: _PoolIR):
    """run_chunks(gen, from_front) -> i1: claim and run chunks of the published loop until none
    is left, the first unclaimed one each time if from_front (the caller) else the last (the
    helpers); gen < 0 means "not yet a helper of any loop" (the first claim then takes a helper
    slot of whichever loop is published), else claims only from loop `gen`. Then counts the
    chunks it ran as finished and returns whether that finished the loop."""
    ir, i64 = p.ir, p.i64
    f = ir.Function(p.m, ir.FunctionType(ir.IntType(1), [i64, ir.IntType(1)]), name="pool_run_chunks")
    f.linkage = "internal"
    b = ir.IRBuilder(f.append_basic_block("entry"))
    entry = b.block
    w0 = p.load(b, p.word)
    head, claim, run, leave = (f.append_basic_block(x) for x in ("claim_check", "claim", "run", "leave"))
    b.branch(head)
    b.position_at_end(head)
    w = b.phi(i64)            # the word as last read
    gen = b.phi(i64)          # the loop this thread helps with, or < 0
    ran = b.phi(i64)          # chunks run
    w.add_incoming(w0, entry)
    gen.add_incoming(f.args[0], entry)
    ran.add_incoming(p.c(0), entry)
    left = b.and_(w, p.c(CHUNK_MASK))
    joined = b.icmp_signed(">=", gen, p.c(0))
    word_gen = b.lshr(w, p.c(GEN_SHIFT))
    slots = p.field(b, w, HELPER_SHIFT, HELPER_MASK)
    ok = b.and_(b.icmp_signed(">", left, p.c(0)),
                b.select(joined, b.icmp_unsigned("==", word_gen, gen),
                         b.icmp_signed(">", slots, p.c(0))))
    b.cbranch(ok, claim, leave)
    b.position_at_end(claim)
    front = p.field(b, w, FRONT_SHIFT, FRONT_MASK)
    from_front = f.args[1]
    # a front claim moves the front up one; a back claim takes the last: left - 1 either way
    step = b.select(from_front, p.c(1 - (1 << FRONT_SHIFT)), p.c(1))
    new = b.sub(w, b.add(step, b.select(joined, p.c(0), p.c(1 << HELPER_SHIFT))))
    res = b.cmpxchg(p.word, w, new, "acq_rel", "acquire")
    seen, won = b.extract_value(res, 0), b.extract_value(res, 1)
    w.add_incoming(seen, claim)
    gen.add_incoming(gen, claim)
    ran.add_incoming(ran, claim)
    b.cbranch(won, run, head)
    b.position_at_end(run)
    # ours until we count it finished: the loop's fields cannot change under us
    n = b.load(p.nchunks, typ=i64)
    task = b.load(p.fn, typ=p.task_ptr)
    index = b.select(from_front, front, b.sub(b.add(front, left), p.c(1)))
    b.call(task, [b.load(p.env, typ=p.ptr), index, n])
    w.add_incoming(p.load(b, p.word), run)
    gen.add_incoming(word_gen, run)
    ran.add_incoming(b.add(ran, p.c(1)), run)
    b.branch(head)
    b.position_at_end(leave)
    nothing, counted = f.append_basic_block("nothing"), f.append_basic_block("count")
    b.cbranch(b.icmp_signed("==", ran, p.c(0)), nothing, counted)
    b.position_at_end(nothing)
    b.ret(ir.Constant(ir.IntType(1), 0))
    b.position_at_end(counted)
    n = b.load(p.nchunks, typ=i64)    # read before our count can let the next loop start
    total = b.add(b.atomic_rmw("add", p.finished, ran, "seq_cst"), ran)
    b.ret(b.icmp_signed("==", total, n))
    return f


def _emit_worker(p: _PoolIR, run_chunks):
    """pool_worker(arg): forever wait for a loop with free helper slots, help with it, and wake
    the caller if this worker finished the loop while the caller slept."""
    ir = p.ir
    worker = ir.Function(p.m, ir.FunctionType(p.ptr, [p.ptr]), name="pool_worker")
    worker.linkage = "internal"
    b = ir.IRBuilder(worker.append_basic_block("entry"))
    outer = worker.append_basic_block("outer")
    b.branch(outer)
    b.position_at_end(outer)
    seen = p.load(b, p.rousals)     # a ROUSE from now on keeps this worker spinning

    def joinable(b):
        w = p.load(b, p.word)
        return b.and_(b.icmp_signed(">", b.and_(w, p.c(CHUNK_MASK)), p.c(0)),
                      b.icmp_signed(">", p.field(b, w, HELPER_SHIFT, HELPER_MASK), p.c(0)))

    def joinable_or_roused(b):
        return b.or_(joinable(b), b.icmp_signed("!=", p.load(b, p.rousals), seen))
    hit, miss = p.spin_until(b, joinable, "work")
    b.position_at_end(miss)
    p.sleep_until(b, p.work_cv, p.sleepers, joinable_or_roused, "work")
    b.branch(outer)                 # to claim at once, or to spin again when roused
    b.position_at_end(hit)
    finished_loop = b.call(run_chunks, [p.c(-1), ir.Constant(ir.IntType(1), 0)])
    wake, back = worker.append_basic_block("wake_caller"), worker.append_basic_block("back")
    b.cbranch(b.and_(finished_loop, b.icmp_signed(">", p.load(b, p.waiting), p.c(0))), wake, back)
    b.position_at_end(wake)
    p.notify(b, p.signal, p.done_cv)
    b.branch(back)
    b.position_at_end(back)
    b.branch(outer)
    return worker


def _emit_parallel_for(p: _PoolIR, worker, run_chunks):
    """PARALLEL_FOR(fn, env, max_chunks, threads)."""
    ir, i64, c = p.ir, p.i64, p.c
    pf = p.entry(kernel_abi.PARALLEL_FOR, kernel_abi.PARALLEL_FOR_SIGNATURE)
    fn, env, max_chunks, flagged_threads = pf.args
    b = ir.IRBuilder(pf.append_basic_block("entry"))
    serial, try_pool, par = (pf.append_basic_block(x) for x in ("serial", "try_pool", "parallel"))
    flag = c(kernel_abi.WARM_POOL_ONLY)
    warm_only = b.and_(b.icmp_signed(">", flagged_threads, c(0)),
                       b.icmp_signed("!=", b.and_(flagged_threads, flag), c(0)))
    threads = b.select(warm_only, b.and_(flagged_threads, c(~kernel_abi.WARM_POOL_ONLY)), flagged_threads)
    # a loop too small to repay a wake-up runs here while a worker sleeps (or none exists yet;
    # `started` is read without the launch lock: a hint, as `sleepers` is)
    cold = b.or_(b.icmp_signed(">", p.load(b, p.sleepers), c(0)), b.icmp_signed("==", p.load(b, p.started), c(0)))
    b.cbranch(b.or_(b.or_(b.icmp_signed("<=", threads, c(1)), b.icmp_signed("<=", max_chunks, c(1))),
                    b.and_(warm_only, cold)), serial, try_pool)
    b.position_at_end(serial)
    b.call(fn, [env, c(0), c(1)])
    b.ret_void()
    b.position_at_end(try_pool)
    busy = b.icmp_signed("!=", b.call(p.trylock, [p.launch]), ir.Constant(p.i32, 0))
    b.cbranch(busy, serial, par)

    b.position_at_end(par)
    # no more threads than chunks: a thread with no chunk to run would only cost a wake-up
    cap = b.select(b.icmp_signed("<", max_chunks, c(MAX_WORKERS + 1)), max_chunks, c(MAX_WORKERS + 1))
    n = b.select(b.icmp_signed(">", threads, cap), cap, threads)
    # start workers up to n - 1
    have = b.load(p.started, typ=i64)
    spawn_h, spawn_b, spawn_d = (pf.append_basic_block(x) for x in ("spawn", "spawn_one", "spawned"))
    pre = b.block
    handle = b.alloca(p.iptr)
    b.branch(spawn_h)
    b.position_at_end(spawn_h)
    k = b.phi(i64)
    k.add_incoming(have, pre)
    b.cbranch(b.icmp_signed("<", k, b.sub(n, c(1))), spawn_b, spawn_d)
    b.position_at_end(spawn_b)
    rc = b.call(p.create, [handle, ir.Constant(p.ptr, None), worker, ir.Constant(p.ptr, None)])
    ok = pf.append_basic_block("spawn_ok")
    b.cbranch(b.icmp_signed("==", rc, ir.Constant(p.i32, 0)), ok, spawn_d)
    b.position_at_end(ok)
    b.call(p.detach, [b.load(handle, typ=p.iptr)])
    k1 = b.add(k, c(1))
    b.store(k1, p.started)
    k.add_incoming(k1, ok)
    b.branch(spawn_h)
    b.position_at_end(spawn_d)
    # workers that could not be started: run with fewer helpers (maybe none)
    started = b.load(p.started, typ=i64)
    helpers = b.select(b.icmp_signed("<", started, b.sub(n, c(1))), started, b.sub(n, c(1)))
    want = b.mul(b.add(helpers, c(1)), c(CHUNKS_PER_THREAD))
    nchunks = b.select(b.icmp_signed("<", max_chunks, want), max_chunks, want)
    alone, publish = pf.append_basic_block("alone"), pf.append_basic_block("publish")
    b.cbranch(b.icmp_signed("==", helpers, c(0)), alone, publish)
    b.position_at_end(alone)
    b.call(p.unlock, [p.launch])
    b.call(fn, [env, c(0), c(1)])
    b.ret_void()

    b.position_at_end(publish)
    b.store(fn, p.fn)
    b.store(env, p.env)
    b.store(nchunks, p.nchunks)
    p.store(b, p.finished, c(0))
    gen = b.and_(b.add(b.load(p.gen, typ=i64), c(1)), c(0x7FFFFFFF))
    b.store(gen, p.gen)
    word = b.or_(b.or_(b.shl(gen, c(GEN_SHIFT)), b.shl(helpers, c(HELPER_SHIFT))), nchunks)
    p.store(b, p.word, word)
    wake, claim = pf.append_basic_block("wake_workers"), pf.append_basic_block("claim")
    b.cbranch(b.icmp_signed(">", p.load(b, p.sleepers), c(0)), wake, claim)
    # one wake-up per helper slot, not a broadcast: workers beyond the slots stay asleep
    b.position_at_end(wake)
    b.call(p.lock, [p.mutex])
    wake_h, wake_b = pf.append_basic_block("wake_next"), pf.append_basic_block("wake_one")
    pre = b.block
    b.branch(wake_h)
    b.position_at_end(wake_h)
    k = b.phi(i64)
    k.add_incoming(c(0), pre)
    woken = pf.append_basic_block("woken")
    b.cbranch(b.icmp_signed("<", k, helpers), wake_b, woken)
    b.position_at_end(wake_b)
    b.call(p.signal, [p.work_cv])
    k.add_incoming(b.add(k, c(1)), wake_b)
    b.branch(wake_h)
    b.position_at_end(woken)
    b.call(p.unlock, [p.mutex])
    b.branch(claim)
    b.position_at_end(claim)
    finished_loop = b.call(run_chunks, [gen, ir.Constant(ir.IntType(1), 1)])
    done, join = pf.append_basic_block("done"), pf.append_basic_block("join")
    b.cbranch(finished_loop, done, join)
    # wait only for chunks that workers claimed: none is left unclaimed now
    b.position_at_end(join)

    def all_finished(b):
        return b.icmp_signed("==", p.load(b, p.finished), nchunks)
    joined, slow = p.spin_until(b, all_finished, "join")
    b.position_at_end(joined)
    b.branch(done)
    b.position_at_end(slow)
    p.sleep_until(b, p.done_cv, p.waiting, all_finished, "join")
    b.branch(done)
    b.position_at_end(done)
    b.call(p.unlock, [p.launch])
    b.ret_void()
    return pf


def _emit_rouse(p: _PoolIR):
    """ROUSE(): sleeping workers wake and spin for the next loop (they sleep again after
    SPIN_ROUNDS rounds without one)."""
    ir = p.ir
    f = ir.Function(p.m, ir.FunctionType(p.void, []), name=ROUSE)
    b = ir.IRBuilder(f.append_basic_block("entry"))
    wake, done = f.append_basic_block("wake"), f.append_basic_block("done")
    b.atomic_rmw("add", p.rousals, p.c(1), "seq_cst")
    b.cbranch(b.icmp_signed(">", p.load(b, p.sleepers), p.c(0)), wake, done)
    b.position_at_end(wake)
    p.notify(b, p.broadcast, p.work_cv)
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()
    return f


def _emit_legacy_entry(p: _PoolIR, parallel_for):
    """PARALLEL_FOR_LEGACY(fn, env, n): n chunks on n threads."""
    ir = p.ir
    f = p.entry(kernel_abi.PARALLEL_FOR_LEGACY, kernel_abi.PARALLEL_FOR_LEGACY_SIGNATURE)
    b = ir.IRBuilder(f.append_basic_block("entry"))
    fn, env, n = f.args
    b.call(parallel_for, [fn, env, n, n])
    b.ret_void()


def build_ir(ptr_bits: int, arch: str = "x86_64") -> str:
    """The pool as LLVM IR for a CPU with `ptr_bits`-bit pointers and architecture `arch` (a
    triple's first part): built for this process by ensure_loaded, and by the compiler for a
    board, where it is linked into the kernels' shared object (vdla.compiler.codegen.link)."""
    p = _PoolIR(ptr_bits, arch)
    run_chunks = _emit_run_chunks(p)
    worker = _emit_worker(p, run_chunks)
    parallel_for = _emit_parallel_for(p, worker, run_chunks)
    _emit_legacy_entry(p, parallel_for)
    _emit_rouse(p)
    return str(p.m)


def ensure_loaded():
    """Build the pool for this process (once) and make its entry points resolvable by kernel
    objects loaded afterwards."""
    global _engine
    with _lock:
        if _engine is not None:
            return
        import ctypes
        import llvmlite.binding as llvm
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        triple = llvm.get_process_triple()
        text = build_ir(ctypes.sizeof(ctypes.c_void_p) * 8, triple.split("-")[0])
        mod = llvm.parse_assembly(text)
        mod.triple = triple
        mod.verify()
        tm = llvm.Target.from_default_triple().create_target_machine(opt=2)
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        for name in (kernel_abi.PARALLEL_FOR, kernel_abi.PARALLEL_FOR_LEGACY):
            llvm.add_symbol(name, engine.get_function_address(name))
        global _rouse
        _rouse = ctypes.CFUNCTYPE(None)(engine.get_function_address(ROUSE))
        _engine = engine
        import os
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_reset_after_fork)


STATE = [("pool_mutex", SYNC_BYTES), ("pool_launch_mutex", SYNC_BYTES), ("pool_work_cv", SYNC_BYTES),
         ("pool_done_cv", SYNC_BYTES), ("pool_claim_word", 8), ("pool_finished", 8),
         ("pool_sleepers", 8), ("pool_caller_waiting", 8), ("pool_generation", 8), ("pool_started", 8),
         ("pool_rousals", 8)]


def rouse() -> None:
    """Wake this process's sleeping workers to spin for the next parallel loop (nothing before
    the pool's first use: it has no workers yet)."""
    if _rouse is not None:
        _rouse()


def state_symbols() -> list[tuple[str, int]]:
    """(symbol, bytes) of the pool's state, which a forked child zeroes."""
    return [(SYMBOL_PREFIX + name, size) for name, size in STATE]


def _reset_after_fork():
    """A forked child has none of the parent's worker threads: forget them (and any lock
    state copied mid-launch) so the child's first parallel call starts its own."""
    import ctypes
    if _engine is None:
        return
    for symbol, size in state_symbols():
        addr = _engine.get_global_value_address(symbol)
        if addr:
            ctypes.memset(addr, 0, size)
