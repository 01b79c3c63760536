"""Schedules: how each tensor's loop nest is shaped, ordered, placed and stored.

A Schedule has one Stage per operation. A stage starts with one loop per axis (data axes,
then reduction axes) and the primitives below rewrite its list of leaf loops, record how
leaves relate to the original axes (Split/Fuse relations), annotate loops (parallel, vectorize,
unroll, virtual thread, tensorize) and decide where the stage's loops go (at the root, inside a
consumer's loop, or inlined into its consumers). Nothing is lowered here; see lower.py.
"""
from __future__ import annotations

from vdla.hw.errors import CompileError

from ..te.tensor import IterVar, ComputeOp, PlaceholderOp, Tensor
from ..tir import expr as E
from ..tir.functor import transform, substitute
from ..tir.stmt import ForKind
from ..tir.prefetch import LOCALITY_L2


class ScheduleError(CompileError, ValueError):
    pass


class Split:
    def __init__(self, parent, outer, inner, factor):
        self.parent, self.outer, self.inner, self.factor = parent, outer, inner, factor


class Fuse:
    def __init__(self, outer, inner, fused):
        self.outer, self.inner, self.fused = outer, inner, fused


class VThread:
    """Binding target for a loop that becomes a virtual thread (see Stage.bind)."""

    def __init__(self, name="vthread"):
        self.name = name


def vthread(name="vthread"):
    return VThread(name)


class Stage:
    def __init__(self, schedule, op, axis, reduce_axis, body):
        self.schedule = schedule
        self.op = op
        self.name = op.name
        self.axis = list(axis)            # root data axes
        self.reduce_axis = list(reduce_axis)
        self.body = body                  # may be rewritten by cache_read / cache_write
        self.leaf_iter_vars = self.axis + self.reduce_axis
        self.all_iter_vars = list(self.leaf_iter_vars)
        self.relations = []
        self.iter_kind = {}               # IterVar -> ForKind
        self.iter_annot = {}              # IterVar -> dict (pragmas, vthread name)
        self.tensorize_at = None          # (IterVar, TensorIntrin)
        self.attach = "root"              # "root" | "inline" | ("at", Stage, IterVar)
        self.scope = "global"
        self.is_output = False
        self.store_tags = []              # launch tags only whose index-0 threads store (GPU)
        self.whole_axes = set()           # data axes (by position) whose attached region is the whole extent
        self.prefetches = []              # (tensor, at, ahead, distance, locality, spread): Stage.prefetch

    @property
    def is_placeholder(self):
        return isinstance(self.op, PlaceholderOp)

    def __repr__(self):
        return f"Stage({self.name})"

    # -- checks --------------------------------------------------------------------------
    def _leaf(self, iv, prim):
        if not isinstance(iv, IterVar):
            raise ScheduleError(f"{prim} on stage {self.name}: expected an IterVar, got {iv!r}")
        if iv not in self.leaf_iter_vars:
            where = "was already split or fused" if iv in self.all_iter_vars else \
                "does not belong to this stage"
            raise ScheduleError(f"{prim} on stage {self.name}: axis {iv.name} {where}; leaf "
                                f"axes are {[v.name for v in self.leaf_iter_vars]}")
        return self.leaf_iter_vars.index(iv)

    def _no_placeholder(self, prim):
        if self.is_placeholder:
            raise ScheduleError(f"{prim}: {self.name} is an input placeholder and has no loops")

    # -- loop structure ------------------------------------------------------------------
    def split(self, iv, factor=None, nparts=None):
        """Split iv into (outer, inner) with inner extent `factor` (or outer extent `nparts`).
        A factor that does not divide the extent is allowed; the tail is guarded."""
        self._no_placeholder("split")
        pos = self._leaf(iv, "split")
        if (factor is None) == (nparts is None):
            raise ScheduleError(f"split of {self.name}.{iv.name}: give exactly one of factor, nparts")
        if nparts is not None:
            nparts = int(nparts)
            if nparts <= 0:
                raise ScheduleError(f"split of {self.name}.{iv.name}: nparts must be positive, got {nparts}")
            factor = -(-iv.extent // nparts)
        factor = int(factor)
        if factor <= 0:
            raise ScheduleError(f"split of {self.name}.{iv.name}: factor must be positive, got {factor}")
        kind = "reduce" if iv.kind == "reduce" else "data"
        outer = IterVar(-(-iv.extent // factor), iv.name + ".o", kind)
        inner = IterVar(min(factor, iv.extent), iv.name + ".i", kind)
        self.relations.append(Split(iv, outer, inner, factor))
        self.leaf_iter_vars[pos:pos + 1] = [outer, inner]
        self.all_iter_vars += [outer, inner]
        return outer, inner

    def tile(self, x, y, x_factor, y_factor):
        xo, xi = self.split(x, x_factor)
        yo, yi = self.split(y, y_factor)
        self.reorder(xo, yo, xi, yi)
        return xo, yo, xi, yi

    def fuse(self, *ivs):
        """Fuse adjacent leaf axes (outermost first) into one."""
        self._no_placeholder("fuse")
        if len(ivs) < 2:
            return ivs[0]
        pos = [self._leaf(iv, "fuse") for iv in ivs]
        if pos != list(range(pos[0], pos[0] + len(pos))):
            raise ScheduleError(f"fuse on stage {self.name}: axes {[v.name for v in ivs]} must be "
                                "adjacent and in loop order; reorder them first")
        kinds = {iv.kind for iv in ivs}
        if "reduce" in kinds and len(kinds) > 1:
            raise ScheduleError(f"fuse on stage {self.name}: cannot fuse data and reduction axes")
        cur = ivs[0]
        for nxt in ivs[1:]:
            fused = IterVar(cur.extent * nxt.extent, f"{cur.name}.{nxt.name}.f",
                            "reduce" if nxt.kind == "reduce" else "data")
            self.relations.append(Fuse(cur, nxt, fused))
            p = self.leaf_iter_vars.index(cur)
            self.leaf_iter_vars[p:p + 2] = [fused]
            self.all_iter_vars.append(fused)
            cur = fused
        return cur

    def reorder(self, *ivs):
        """Put the given leaf axes in this order, in the slots they occupy now."""
        self._no_placeholder("reorder")
        pos = [self._leaf(iv, "reorder") for iv in ivs]
        if len(set(pos)) != len(pos):
            raise ScheduleError(f"reorder on stage {self.name}: an axis is listed twice")
        for p, iv in zip(sorted(pos), ivs):
            self.leaf_iter_vars[p] = iv

    def _annotate(self, iv, kind, prim):
        self._no_placeholder(prim)
        self._leaf(iv, prim)
        if kind in (ForKind.PARALLEL, ForKind.VTHREAD) and iv.kind == "reduce":
            raise ScheduleError(f"{prim} on stage {self.name}: {iv.name} is a reduction axis; "
                                "its iterations are not independent")
        self.iter_kind[iv] = kind

    def unroll(self, iv):
        self._annotate(iv, ForKind.UNROLLED, "unroll")

    def vectorize(self, iv):
        self._annotate(iv, ForKind.VECTORIZED, "vectorize")

    def parallel(self, iv):
        self._annotate(iv, ForKind.PARALLEL, "parallel")

    def bind(self, iv, thread):
        """Bind a loop to a virtual thread (schedule.vthread()): its iterations become
        independent instruction streams that a backend may interleave (the VDLA backend uses
        them to overlap load/compute/store); on CPUs they run one after another.
        Or bind it to a GPU launch dimension ("blockIdx.x" ... "threadIdx.z"): its iterations
        become the blocks or the threads of a block of a kernel (see thread_binding.py). A
        reduction axis bound to threadIdx.* reduces across the threads of a block (each thread
        its slice, then a tree in shared memory: cross_thread.py)."""
        if isinstance(thread, str):
            from .thread_binding import check_binding
            self._no_placeholder("bind")
            self._leaf(iv, "bind")
            check_binding(self, iv, thread, ScheduleError)
            self._annotate(iv, ForKind.THREAD_BINDING, "bind")
            self.iter_annot.setdefault(iv, {})["thread_tag"] = thread
            return
        if not isinstance(thread, VThread):
            raise ScheduleError(f"bind on stage {self.name}: bind a loop to schedule.vthread() or to a "
                                f"GPU launch dimension such as 'threadIdx.x', got {thread!r}")
        self._annotate(iv, ForKind.VTHREAD, "bind")
        self.iter_annot.setdefault(iv, {})["vthread"] = thread.name

    def store_by_first_thread(self, tag="threadIdx.x"):
        """Make this stage's stores from the threads with index 0 along `tag` only: for a stage
        computed from a cross-thread reduction's result, which every thread along `tag` holds,
        so that they do not all write the same elements."""
        from .thread_binding import check_store_tag
        self._no_placeholder("store_by_first_thread")
        check_store_tag(self, tag, ScheduleError)
        self.store_tags.append(tag)

    def pragma(self, iv, key, value=True):
        self._leaf(iv, "pragma")
        self.iter_annot.setdefault(iv, {})[key] = value

    def prefetch(self, tensor, at, ahead, distance=1, locality=LOCALITY_L2, spread=None):
        """At the top of each iteration of loop `at`, prefetch what this stage reads of `tensor`
        there `distance` iterations of loop `ahead` later (`ahead` encloses `at`, or is it), so
        the next slice streams into cache (`locality`, tir.prefetch) while this one is computed
        on: for each load of `tensor` in the stage, its address with the loops inside `at` at
        their first values, once for each value of the unrolled ones it reads (a register
        tile's output blocks each get their line). `spread`, a loop enclosing `at`: iteration p
        of it issues only the (p mod count)-th of those copies, so a slice's lines go out over
        several of its iterations instead of all in the first."""
        self._no_placeholder("prefetch")
        for iv in (at, ahead) + ((spread,) if spread is not None else ()):
            self._leaf(iv, "prefetch")
        self.prefetches.append((tensor, at, ahead, distance, locality, spread))

    def tensorize(self, iv, intrin):
        """Replace the loops from iv inwards by the tensor intrinsic `intrin`; checked against
        the intrinsic's declaration when lowering (see intrin.tensorize)."""
        self._no_placeholder("tensorize")
        self._leaf(iv, "tensorize")
        self.tensorize_at = (iv, intrin)

    # -- placement -----------------------------------------------------------------------
    def compute_at(self, parent, iv):
        """Compute this stage inside parent's loop iv, only the region parent needs there."""
        self._no_placeholder("compute_at")
        if not isinstance(parent, Stage):
            raise ScheduleError(f"compute_at of {self.name}: parent must be a Stage (s[T]), got {parent!r}")
        parent._leaf(iv, "compute_at target")
        if parent is self:
            raise ScheduleError(f"compute_at of {self.name}: cannot attach a stage to itself")
        if self.is_output:
            raise ScheduleError(f"compute_at of {self.name}: it is an output of the schedule")
        self.attach = ("at", parent, iv)

    def compute_inline(self):
        """Substitute this stage's expression into its consumers (no storage, no loops)."""
        self._no_placeholder("compute_inline")
        if self.reduce_axis:
            raise ScheduleError(f"compute_inline of {self.name}: it is a reduction; only "
                                "injective computations can be inlined")
        if self.is_output:
            raise ScheduleError(f"compute_inline of {self.name}: it is an output of the schedule")
        self.attach = "inline"

    def compute_root(self):
        self._no_placeholder("compute_root")
        self.attach = "root"

    def set_scope(self, scope):
        self.scope = scope

    def keep_whole(self, *axes):
        """An attached stage's region spans these data axes (positions, negative from the end)
        whole, whatever its readers touch: an SRAM element is moved and held whole even where a
        reader uses part of it (a DEPTHWISE weight tile's tap lanes)."""
        self._no_placeholder("keep_whole")
        n = len(self.axis)
        for a in axes:
            if not -n <= a < n:
                raise ScheduleError(f"keep_whole on stage {self.name}: no data axis {a} of {n}")
            self.whole_axes.add(a % n)


class Schedule:
    """Stages for every operation reachable from `outputs`, producers before consumers."""

    def __init__(self, outputs):
        self.outputs = list(outputs)
        self.stages = []
        self.stage_map = {}
        seen = set()

        def visit(t):
            if id(t.op) in seen:
                return
            seen.add(id(t.op))
            for inp in t.op.input_tensors:
                visit(inp)
            self._add_stage(t.op)
        for t in self.outputs:
            visit(t)
        for t in self.outputs:
            self.stage_map[t.op].is_output = True

    def _add_stage(self, op, before=None):
        if isinstance(op, ComputeOp):
            st = Stage(self, op, op.axis, op.reduce_axis, op.body)
        else:
            st = Stage(self, op, [], [], None)
        if before is None:
            self.stages.append(st)
        else:
            self.stages.insert(self.stages.index(before), st)
        self.stage_map[op] = st
        return st

    def __getitem__(self, t):
        op = t.op if isinstance(t, Tensor) else t
        if op not in self.stage_map:
            raise ScheduleError(f"{getattr(op, 'name', op)} is not part of this schedule")
        return self.stage_map[op]

    def readers(self, tensor):
        return [st for st in self.stages if st.body is not None and _reads(st.body, tensor)]

    def cache_read(self, tensor, scope, readers):
        """A copy of `tensor` in memory `scope`, read by `readers` instead of the original."""
        readers = [self[r] if not isinstance(r, Stage) else r for r in readers]
        for r in readers:
            if not _reads(r.body, tensor):
                raise ScheduleError(f"cache_read of {tensor.name}: stage {r.name} does not read it")
        from ..te.operation import compute
        cache = compute(tensor.shape, lambda *i: tensor(*i), name=f"{tensor.name}.{scope}")
        first = min(self.stages.index(r) for r in readers)
        st = self._add_stage(cache.op, before=self.stages[first])
        st.scope = scope

        def swap(n):
            if isinstance(n, E.TensorRead) and n.tensor is tensor:
                return E.TensorRead(cache, n.indices)
            return None
        for r in readers:
            r.body = transform(r.body, swap)
        return cache

    def cache_write(self, tensor, scope):
        """Compute `tensor` into a buffer in `scope`, then copy it to the original tensor.
        Call it before other primitives on the tensor's stage."""
        st = self[tensor]
        if st.is_placeholder:
            raise ScheduleError(f"cache_write of {tensor.name}: inputs cannot be written")
        if st.relations or st.attach != "root":
            raise ScheduleError(f"cache_write of {tensor.name}: apply it before splitting, "
                                "fusing or placing the stage")
        new_axis = [IterVar(iv.extent, iv.name + ".c") for iv in st.axis]
        mapping = {iv.var: n.var for iv, n in zip(st.axis, new_axis)}
        body = st.body
        if isinstance(body, E.Reduce):
            new_r = [IterVar(r.extent, r.name + ".c", "reduce", r.dom_min) for r in body.axis]
            mapping.update({r.var: n.var for r, n in zip(body.axis, new_r)})
            src = substitute(body.source, mapping)
            cond = substitute(body.condition, mapping) if body.condition is not None else None
            new_body = E.Reduce(body.combiner, src, new_r, cond)
        else:
            new_body = substitute(body, mapping)
        op = ComputeOp(f"{tensor.name}.{scope}", new_axis, new_body, tag=st.op.tag)
        cache = Tensor(op)
        cst = self._add_stage(op, before=st)
        cst.scope = scope
        st.body = E.TensorRead(cache, [iv.var for iv in st.axis])
        st.reduce_axis = []
        st.leaf_iter_vars = list(st.axis)
        return cache


def _reads(body, tensor):
    from ..tir.functor import visit
    found = []
    visit(body, lambda n: found.append(1) if isinstance(n, E.TensorRead) and n.tensor is tensor else None)
    return bool(found)


def create_schedule(outputs) -> Schedule:
    if isinstance(outputs, Tensor):
        outputs = [outputs]
    return Schedule(outputs)
