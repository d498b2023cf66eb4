"""Collectives executed through torch.distributed (NCCL on GPUs, gloo on CPUs), on whatever
process group the measuring backend set up (torch-distributed: one process per device).

Buffers follow nccl-tests' conventions (tf_collective.plugin). The callable carries a `check`
that proves the collective computed the right thing on known values (an all-reduce sums
correctly) and then refills the buffers with random data: timings never run on zeros, and
never on the check's constants. Registered under the Ops group; the Core side never imports it.
"""

from tensorforge_measure import Unavailable, WorkloadBuilder, hookimpl, operator_range, torch_dtype


def _gather_scatter(dist):
    """all_gather / reduce_scatter into one tensor: the *_single names from PyTorch 2.13 on
    (the *_tensor ones are deprecated there), the *_tensor names before."""
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    return gather, scatter


def _group(dist, n: int, world: int):
    """The process group of the first n ranks (every rank must take part in creating it)."""
    return None if n == world else dist.new_group(list(range(n)))


class CollectiveTorch(WorkloadBuilder):
    kind = "collective"
    framework = "torch"

    def build(self, p, device):
        import torch
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            raise Unavailable(
                "collectives run through torch.distributed: measure them on a system "
                "target with the torch-distributed backend (tensorforge run --target h200x2)"
            )
        world, rank = dist.get_world_size(), dist.get_rank()
        n = p.ranks or world
        if n > world:
            raise Unavailable(f"{p.op} over {n} ranks needs {n} processes; this run has {world}")
        dtype = torch_dtype(p.dtype, "this collective")
        elem = torch.tensor([], dtype=dtype).element_size()
        count = p.nbytes // elem
        if p.op in ("all_gather", "reduce_scatter", "all_to_all") and count % n:
            raise Unavailable(f"{p.op}: {count} elements do not split into {n} equal shards")
        group = _group(dist, n, world)
        all_gather, reduce_scatter = _gather_scatter(dist)
        member = rank < n
        shard = count // n

        def rand(k):
            return torch.randn(k, device=device, dtype=dtype)

        buffers = {}
        if p.op == "all_reduce" or p.op == "broadcast":
            buffers["x"] = rand(count)
        elif p.op == "all_gather":
            buffers["inp"], buffers["out"] = rand(shard), rand(count)
        elif p.op == "reduce_scatter":
            buffers["inp"], buffers["out"] = rand(count), rand(shard)
        elif p.op == "all_to_all":
            buffers["inp"], buffers["out"] = rand(count), rand(count)
        elif p.op == "send_recv":
            buffers["x"] = rand(count)
        b = buffers

        def run():
            if member:
                with operator_range(p.op):  # the Core's one operator of a collective
                    call()

        def call():
            if p.op == "all_reduce":
                dist.all_reduce(b["x"], group=group)
            elif p.op == "broadcast":
                dist.broadcast(b["x"], src=0, group=group)
            elif p.op == "all_gather":
                all_gather(b["out"], b["inp"], group=group)
            elif p.op == "reduce_scatter":
                reduce_scatter(b["out"], b["inp"], group=group)
            elif p.op == "all_to_all":
                dist.all_to_all_single(b["out"], b["inp"], group=group)
            elif p.op == "send_recv":
                # pairs (0,1), (2,3), ...: the even rank sends; a last odd-out rank idles
                peer = rank + 1 if rank % 2 == 0 else rank - 1
                if peer < n:
                    req = dist.isend(b["x"], peer) if rank % 2 == 0 else dist.irecv(b["x"], peer)
                    req.wait()

        def check():
            """Known values in, the exact expected result out; then random data again."""
            if not member:
                return True, "not a member of the collective's group"
            r = rank
            if p.op == "all_reduce":
                b["x"].fill_(r + 1)
                run()
                ok, want = bool(torch.all(b["x"] == n * (n + 1) / 2)), f"every element {n * (n + 1) // 2}"
            elif p.op == "broadcast":
                b["x"].fill_(7 if r == 0 else -1)
                run()
                ok, want = bool(torch.all(b["x"] == 7)), "every element 7 (rank 0's value)"
            elif p.op == "all_gather":
                b["inp"].fill_(r + 1)
                run()
                expect = torch.arange(1, n + 1, device=device, dtype=dtype).repeat_interleave(shard)
                ok, want = bool(torch.equal(b["out"], expect)), "shard i holds i+1"
            elif p.op == "reduce_scatter":
                b["inp"].fill_(r + 1)
                run()
                ok, want = bool(torch.all(b["out"] == n * (n + 1) / 2)), f"every element {n * (n + 1) // 2}"
            elif p.op == "all_to_all":
                b["inp"].copy_((r * n + torch.arange(n, device=device)).to(dtype).repeat_interleave(shard))
                run()
                expect = (torch.arange(n, device=device) * n + r).to(dtype).repeat_interleave(shard)
                ok, want = bool(torch.equal(b["out"], expect)), "chunk j holds j*n + rank"
            else:  # send_recv
                peer = r + 1 if r % 2 == 0 else r - 1
                b["x"].fill_(r + 1 if r % 2 == 0 else -1)
                run()
                ok = peer >= n or bool(torch.all(b["x"] == (r + 1 if r % 2 == 0 else r)))
                want = "the receiver holds the sender's rank + 1"
            for t in b.values():
                t.copy_(torch.randn_like(t))
            return ok, f"{p.op} over {n} ranks: {'correct' if ok else 'WRONG'} ({want})"

        run.check = check
        return run


@hookimpl
def tensorforge_measure_register_builders(register):
    register(CollectiveTorch())
