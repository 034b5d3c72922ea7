#!/usr/bin/env python3
"""allreduce_ref.py — the fabric's all-reduce bandwidth measured outside rig, the way
nccl-tests' all_reduce_perf measures it, as the reference for `rig bench collectives`
(tools/gpu/tp_check.sh; docs/gpu.md, "Tensor parallelism on 4 GPUs").

One process per GPU (torch.multiprocessing), NCCL through torch.distributed on 127.0.0.1;
bf16, in place, the sizes rig bench collectives uses; per size 3 warm-up all-reduces, then
`--repeats` each between its own CUDA events, the median per rank and the slowest rank's
median reported. algbw = bytes / time, busbw = algbw x 2 (n - 1) / n. NVLink multicast stays
off (NCCL_NVLS_ENABLE=0, set here before NCCL starts, as everywhere on the shared hosts).

usage: python3 tools/gpu/allreduce_ref.py --ranks 4 [--repeats 10]
"""
import argparse
import os
import socket
import statistics

os.environ["NCCL_NVLS_ENABLE"] = "0"
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

SIZES = [8 << 10, 64 << 10, 512 << 10, 2 << 20, 16 << 20, 64 << 20, 256 << 20]


def worker(rank, ranks, port, repeats, queue):
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=ranks)
    data = torch.zeros(SIZES[-1] // 2, dtype=torch.bfloat16, device="cuda")
    rows = []
    for size in SIZES:
        view = data[: size // 2]
        for _ in range(3):
            dist.all_reduce(view)
        torch.cuda.synchronize()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(repeats)]
        for start, end in events:
            start.record()
            dist.all_reduce(view)
            end.record()
        torch.cuda.synchronize()
        median = statistics.median(s.elapsed_time(e) for s, e in events) * 1e-3
        slowest = torch.tensor([median], device="cuda", dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        rows.append((size, float(slowest.item())))
    if rank == 0:
        queue.put(rows)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=torch.cuda.device_count())
    ap.add_argument("--repeats", type=int, default=10)
    a = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, a.ranks, port, a.repeats, queue))
             for r in range(a.ranks)]
    for p in procs:
        p.start()
    rows = queue.get(timeout=300)
    for p in procs:
        p.join(timeout=60)
    n = a.ranks
    print(f"all-reduce reference: torch {torch.__version__}, NCCL "
          f"{'.'.join(map(str, torch.cuda.nccl.version()))}, {n} GPUs "
          f"({torch.cuda.get_device_name(0)})")
    print(f"  {'bytes':>12} {'ranks':>6} {'us':>10} {'algbw GB/s':>12} {'busbw GB/s':>12}")
    for size, seconds in rows:
        algbw = size / seconds
        print(f"  {size:>12} {n:>6} {seconds * 1e6:>10.2f} {algbw * 1e-9:>12.2f} "
              f"{algbw * 2 * (n - 1) / n * 1e-9:>12.2f}")


if __name__ == "__main__":
    main()
