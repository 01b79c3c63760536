"""The CPU kernels' thread pool: `void vdla_parallel_for(fn, env, n)` runs
fn(env, tid, n) for tid = 0..n-1, tid 0 on the calling thread and the others on persistent
worker threads (started on first use; between calls they spin briefly, then sleep on a
condition variable).

Kernels compiled with Target.threads > 1 call this symbol for their parallel loops; it is
machine code built here, once per process, from LLVM IR (pthread calls, atomics and the
CPU's spin-wait hint),
and registered with LLVM so every kernel object loaded afterwards links against it. Reusing
threads saves the tens of microseconds a pthread_create/join pair costs on every call.

Waits spin briefly before they sleep: a worker polls the launch generation, and the caller
polls the count of unfinished tasks, for SPIN_ROUNDS rounds of a pause hint before falling
back to the condition variables. Waking a sleeping thread crosses to another (virtual) CPU;
on the 2-vCPU machines we measure on that cost 40-45 us each way, so 85-93 us per 2-thread
call, more than a whole 1x1 convolution of MobileNetV2 takes; with the spin a call costs
about 1 us. The spin covers the gap between consecutive kernels of a graph; past it a worker
sleeps and costs nothing.
"""
from __future__ import annotations

import threading

_lock = threading.Lock()
_engine = None
SYMBOL = "vdla_parallel_for"
MAX_WORKERS = 63
SYNC_BYTES = 64          # >= sizeof(pthread_mutex_t), sizeof(pthread_cond_t) on glibc targets
SPIN_ROUNDS = 4096       # pause hints before a wait sleeps: 0.1-0.15 ms on the Zen 4 hosts


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


def _build_ir(ptr_bits: int, arch: str = "x86_64") -> str:
    import llvmlite.ir.types
    from llvmlite import ir
    llvmlite.ir.types.ir_layer_typed_pointers_enabled = False
    i1, i32, i64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
    iptr = ir.IntType(ptr_bits)
    ptr = ir.PointerType()
    void = ir.VoidType()
    m = ir.Module("vdla_thread_pool")

    def glob(name, typ, init):
        g = ir.GlobalVariable(m, typ, name="vdla_" + name)
        g.initializer = init
        g.align = 16
        g.type = ptr
        return g

    sync_t = ir.ArrayType(ir.IntType(8), SYNC_BYTES)
    zero_sync = ir.Constant(sync_t, None)
    mutex = glob("pool_mutex", sync_t, zero_sync)          # protects everything below
    launch = glob("pool_launch_mutex", sync_t, zero_sync)   # one parallel_for at a time
    work_cv = glob("pool_work_cv", sync_t, zero_sync)
    done_cv = glob("pool_done_cv", sync_t, zero_sync)
    gen = glob("pool_generation", i64, ir.Constant(i64, 0))
    fn_g = glob("pool_fn", ptr, ir.Constant(ptr, None))
    env_g = glob("pool_env", ptr, ir.Constant(ptr, None))
    ntasks = glob("pool_ntasks", i64, ir.Constant(i64, 0))
    pending = glob("pool_pending", i64, ir.Constant(i64, 0))
    started = glob("pool_started", i64, ir.Constant(i64, 0))

    def ext(name, ret, args):
        return ir.Function(m, ir.FunctionType(ret, args), name=name)
    lock = ext("pthread_mutex_lock", i32, [ptr])
    unlock = ext("pthread_mutex_unlock", i32, [ptr])
    wait = ext("pthread_cond_wait", i32, [ptr, ptr])
    broadcast = ext("pthread_cond_broadcast", i32, [ptr])
    signal = ext("pthread_cond_signal", i32, [ptr])
    create = ext("pthread_create", i32, [ptr, ptr, ptr, ptr])
    detach = ext("pthread_detach", i32, [iptr])
    hint = _pause_hint(arch)
    if hint:
        hint_fn = ext(hint[0], void, [i32] * len(hint[1]))
        hint_args = [ir.Constant(i32, a) for a in hint[1]]

    def spin_until(b, ready, name):
        """Emit: up to SPIN_ROUNDS rounds of `ready(b)` (an i1) with a pause hint between.
        Returns (block reached when ready, block reached when the rounds ran out)."""
        head, body = b.append_basic_block(name + "_spin"), b.append_basic_block(name + "_pause")
        hit, miss = b.append_basic_block(name + "_ready"), b.append_basic_block(name + "_sleep")
        pre = b.block
        b.branch(head)
        b.position_at_end(head)
        k = b.phi(i32)
        k.add_incoming(ir.Constant(i32, 0), pre)
        b.cbranch(ready(b), hit, body)
        b.position_at_end(body)
        if hint:
            b.call(hint_fn, hint_args)
        k1 = b.add(k, ir.Constant(i32, 1))
        k.add_incoming(k1, body)
        b.cbranch(b.icmp_signed("<", k1, ir.Constant(i32, SPIN_ROUNDS)), head, miss)
        return hit, miss

    def wait_locked(b, cv, ready, name):
        """Emit, with the mutex held: until ready(b) -> (i1, value) holds, cond_wait on cv.
        Returns the value of the check that passed; the builder continues after the loop."""
        head, sleep, done = (b.append_basic_block(f"{name}_{x}") for x in ("check", "wait", "done"))
        b.branch(head)
        b.position_at_end(head)
        ok, value = ready(b)
        b.cbranch(ok, done, sleep)
        b.position_at_end(sleep)
        b.call(wait, [cv, mutex])
        b.branch(head)
        b.position_at_end(done)
        return value

    task_t = ir.FunctionType(void, [ptr, i64, i64])
    # a pointer typed with the function type: llvmlite reads an indirect callee's signature
    # from it (it still prints as an opaque "ptr")
    task_ptr = ir.PointerType(task_t)

    # worker(arg = tid as pointer-sized integer)
    worker = ir.Function(m, ir.FunctionType(ptr, [ptr]), name="pool_worker")
    worker.linkage = "internal"
    b = ir.IRBuilder(worker.append_basic_block("entry"))
    tid = b.ptrtoint(worker.args[0], i64)
    # A worker is started inside the launch that needs it (the launcher holds the mutex until
    # it has published that generation), so it must run the first generation it sees.
    seen0 = ir.Constant(i64, -1)
    outer = b.append_basic_block("outer")
    entry = b.block
    b.branch(outer)
    b.position_at_end(outer)
    seen = b.phi(i64)
    seen.add_incoming(seen0, entry)
    # Spin on the generation without the mutex; the mutex-held check below decides.
    hit, miss = spin_until(b, lambda b: b.icmp_unsigned(
        "!=", b.load_atomic(gen, "acquire", 8, typ=i64), seen), "work")
    locked = b.append_basic_block("locked")
    for blk in (hit, miss):
        b.position_at_end(blk)
        b.branch(locked)
    b.position_at_end(locked)
    b.call(lock, [mutex])

    def new_generation(b):
        cur = b.load(gen, typ=i64)
        return b.icmp_unsigned("!=", cur, seen), cur
    cur = wait_locked(b, work_cv, new_generation, "work")
    n = b.load(ntasks, typ=i64)
    mine = b.append_basic_block("mine")
    skip = b.append_basic_block("skip")
    b.cbranch(b.icmp_signed("<", tid, n), mine, skip)
    b.position_at_end(mine)
    f = b.load(fn_g, typ=task_ptr)
    e = b.load(env_g, typ=ptr)
    b.call(unlock, [mutex])
    b.call(f, [e, tid, n])
    b.call(lock, [mutex])
    # atomic: the launcher polls `pending` without the mutex
    left = b.sub(b.atomic_rmw("sub", pending, ir.Constant(i64, 1), "acq_rel"), ir.Constant(i64, 1))
    last = b.append_basic_block("last")
    b.cbranch(b.icmp_signed("==", left, ir.Constant(i64, 0)), last, skip)
    b.position_at_end(last)
    b.call(signal, [done_cv])
    b.branch(skip)
    b.position_at_end(skip)
    b.call(unlock, [mutex])
    seen.add_incoming(cur, skip)
    b.branch(outer)

    # vdla_parallel_for(fn, env, n)
    pf = ir.Function(m, ir.FunctionType(void, [task_ptr, ptr, i64]), name=SYMBOL)
    fn, env, nreq = pf.args
    b = ir.IRBuilder(pf.append_basic_block("entry"))
    n = b.select(b.icmp_signed(">", nreq, ir.Constant(i64, MAX_WORKERS + 1)),
                 ir.Constant(i64, MAX_WORKERS + 1), nreq)
    serial = b.append_basic_block("serial")
    par = b.append_basic_block("parallel")
    b.cbranch(b.icmp_signed("<=", n, ir.Constant(i64, 1)), serial, par)
    b.position_at_end(serial)
    b.call(fn, [env, ir.Constant(i64, 0), ir.Constant(i64, 1)])
    b.ret_void()
    b.position_at_end(par)
    b.call(lock, [launch])
    b.call(lock, [mutex])
    # start workers 1..n-1 that do not exist yet
    have = b.load(started, typ=i64)
    spawn_h = b.append_basic_block("spawn_head")
    spawn_b = b.append_basic_block("spawn_body")
    spawn_d = b.append_basic_block("spawn_done")
    pre = b.block
    handle = b.alloca(iptr)
    b.branch(spawn_h)
    b.position_at_end(spawn_h)
    k = b.phi(i64)
    k.add_incoming(have, pre)
    b.cbranch(b.icmp_signed("<", k, b.sub(n, ir.Constant(i64, 1))), spawn_b, spawn_d)
    b.position_at_end(spawn_b)
    tid_arg = b.inttoptr(b.add(k, ir.Constant(i64, 1)), ptr)
    rc = b.call(create, [handle, ir.Constant(ptr, None), worker, tid_arg])
    ok = b.append_basic_block("spawn_ok")
    b.cbranch(b.icmp_signed("==", rc, ir.Constant(i32, 0)), ok, spawn_d)
    b.position_at_end(ok)
    b.call(detach, [b.load(handle, typ=iptr)])
    k1 = b.add(k, ir.Constant(i64, 1))
    b.store(k1, started)
    k.add_incoming(k1, ok)
    b.branch(spawn_h)
    b.position_at_end(spawn_d)
    # workers that could not be started: run with fewer tasks
    avail = b.add(b.load(started, typ=i64), ir.Constant(i64, 1))
    n2 = b.select(b.icmp_signed("<", avail, n), avail, n)
    b.store(fn, fn_g)
    b.store(env, env_g)
    b.store(n2, ntasks)
    # atomic exchanges, not atomic stores: llvmlite's store_atomic needs typed pointers
    b.atomic_rmw("xchg", pending, b.sub(n2, ir.Constant(i64, 1)), "release")
    b.atomic_rmw("xchg", gen, b.add(b.load(gen, typ=i64), ir.Constant(i64, 1)), "release")
    b.call(broadcast, [work_cv])
    b.call(unlock, [mutex])
    b.call(fn, [env, ir.Constant(i64, 0), n2])
    # Join: spin on `pending` first; a worker's results are visible once it has counted down.
    joined, slow = spin_until(b, lambda b: b.icmp_signed(
        "==", b.load_atomic(pending, "acquire", 8, typ=i64), ir.Constant(i64, 0)), "join")
    b.position_at_end(joined)
    b.call(unlock, [launch])
    b.ret_void()
    b.position_at_end(slow)
    b.call(lock, [mutex])
    wait_locked(b, done_cv, lambda b: (b.icmp_signed(
        "<=", b.load(pending, typ=i64), ir.Constant(i64, 0)), None), "join_locked")
    b.call(unlock, [mutex])
    b.call(unlock, [launch])
    b.ret_void()
    return str(m)


def ensure_loaded():
    """Build the pool for this process (once) and make `vdla_parallel_for` resolvable by
    kernel objects loaded afterwards."""
    global _engine
    with _lock:
        if _engine is not None:
            return
        import ctypes
        import llvmlite.binding as llvm
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        triple = llvm.get_process_triple()
        text = _build_ir(ctypes.sizeof(ctypes.c_void_p) * 8, triple.split("-")[0])
        mod = llvm.parse_assembly(text)
        mod.triple = triple
        mod.verify()
        tm = llvm.Target.from_default_triple().create_target_machine(opt=2)
        engine = llvm.create_mcjit_compiler(mod, tm)
        engine.finalize_object()
        llvm.add_symbol(SYMBOL, engine.get_function_address(SYMBOL))
        _engine = engine
        import os
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_reset_after_fork)


STATE = [("pool_mutex", SYNC_BYTES), ("pool_launch_mutex", SYNC_BYTES), ("pool_work_cv", SYNC_BYTES),
         ("pool_done_cv", SYNC_BYTES), ("pool_generation", 8), ("pool_ntasks", 8), ("pool_pending", 8),
         ("pool_started", 8)]


def _reset_after_fork():
    """A forked child has none of the parent's worker threads: forget them (and any lock
    state copied mid-launch) so the child's first parallel call starts its own."""
    import ctypes
    if _engine is None:
        return
    for name, size in STATE:
        addr = _engine.get_global_value_address("vdla_" + name)
        if addr:
            ctypes.memset(addr, 0, size)
