#!/usr/bin/env python3
"""torchvision's ImageFolder over a dataset in its shape, plain and through Larder, side by side:
4 ranks on 2 emulated nodes (LARDER_NODE_SIZE=2), each rank an ImageFolder (the class directories
listed and walked, as torchvision does) with a DistributedSampler and a DataLoader of 2 workers
(fork or spawn), two epochs; the loader reads each file's bytes (the files are not images: the
figure is the file system's part of the input pipeline, without decoding). The page cache is
dropped before each run. Prints the slowest rank's dataset construction and epochs, and ratios.

  imagefolder_bench.py --treebench build/release/bin/larder-treebench \\
      --preload build/release/lib/liblarder_preload.so --root /var/tmp/larder-sizes \\
      [--files 20000] [--ranks 4] [--node-size 2] [--contexts fork,spawn] [--told] \\
      [--compute SECONDS] [--workers 2]

--told adds a third side: Larder told the order (larder.torch.DistributedSampler, one changed
line). --compute sleeps that long per batch in the training loop (a model's step); the compute
floor, batches x compute, is then printed with each epoch's ratio to it.

Needs torchvision (Debian: apt-get install python3-torchvision)."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

from size_table import drop_caches  # the same page-cache drop as the size table

PYTHON = "/usr/bin/python3"


def read_bytes(path):
    with open(path, "rb") as f:
        return len(f.read())


def collate(batch):
    return sum(n for n, _ in batch), [c for _, c in batch]


def rank_main(root, context, out, told="0", compute="0", workers="2"):
    # No MPI in the Python: Debian's mpi4py is built on Open MPI, and a training script need not
    # call MPI (Larder starts from the launcher's environment). Rank and size from MPICH's or
    # Open MPI's launcher; the ranks meet through torch.distributed (gloo, a file store).
    import torch.distributed as dist
    import torch.utils.data as tud
    import torchvision

    rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    size = int(os.environ.get("PMI_SIZE", os.environ.get("OMPI_COMM_WORLD_SIZE", "1")))
    dist.init_process_group("gloo", init_method="file://" + out + ".store", rank=rank,
                            world_size=size)
    dist.barrier()
    t0 = time.monotonic()
    ds = torchvision.datasets.ImageFolder(root, loader=read_bytes, is_valid_file=lambda p: True)
    build = time.monotonic() - t0
    if told == "1":
        from larder.torch import DistributedSampler  # the one changed line
    else:
        DistributedSampler = tud.DistributedSampler
    sampler = DistributedSampler(ds, num_replicas=size, rank=rank, shuffle=True, seed=7)
    compute = float(compute)
    loader = tud.DataLoader(ds, batch_size=64, sampler=sampler, num_workers=int(workers),
                            multiprocessing_context=context, collate_fn=collate)
    epochs, total = [], 0
    for epoch in range(2):
        sampler.set_epoch(epoch)
        dist.barrier()
        t1 = time.monotonic()
        for nbytes, _ in loader:
            total += nbytes
            if compute > 0:
                time.sleep(compute)
        epochs.append(time.monotonic() - t1)
    with open(f"{out}.{rank}", "w") as f:
        json.dump({"times": [build] + epochs, "bytes": total, "files": len(ds),
                   "batches": len(loader)}, f)
    dist.barrier()
    dist.destroy_process_group()


def gather(out, ranks):
    parts = [json.load(open(f"{out}.{r}")) for r in range(ranks)]
    slowest = [max(p["times"][i] for p in parts) for i in range(3)]
    return {"build": slowest[0], "epochs": slowest[1:], "bytes": sum(p["bytes"] for p in parts),
            "files": parts[0]["files"], "batches": max(p["batches"] for p in parts)}


def run(args, tree, context, larder, scratch, told=False):
    out = os.path.join(scratch, "if.json")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LARDER_")}
    cmd = [args.mpiexec, "-n", str(args.ranks), "-bind-to", "none"]
    shm = os.path.join("/dev/shm", "larder-imagefolder")
    if larder:
        local = os.path.join(scratch, "local")
        for d in (shm, local):
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
        cmd += ["-genv", "LD_PRELOAD", args.preload]
        env.update(LARDER_PREFIX=tree, LARDER_LOCAL_FS="cache", LARDER_SHM_DIR=shm, LARDER_DIR=local,
                   LARDER_NODE_SIZE=str(args.node_size),
                   LARDER_STATS=os.path.join(scratch, "stats.json"))
        env.update(kv.split("=", 1) for kv in args.larder_env)
        python_dir = os.path.join(os.path.dirname(os.path.dirname(args.preload)), "python")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [python_dir, env.get("PYTHONPATH")]))
    cmd += [PYTHON, os.path.abspath(__file__), "--rank", tree, context, out, "1" if told else "0",
            str(args.compute), str(args.workers)]
    for leftover in [out + ".store"] + [f"{out}.{r}" for r in range(args.ranks)]:
        if os.path.exists(leftover):
            os.remove(leftover)
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    shutil.rmtree(shm, ignore_errors=True)
    got = gather(out, args.ranks)
    if larder:
        got["stats"] = json.load(open(os.path.join(scratch, "stats.json")))
    return got


def generate(tree, files, low, high):
    """`files` files of low..high random bytes in 20 class directories (seeded)."""
    import random
    rnd = random.Random(49)
    for i in range(files):
        d = os.path.join(tree, f"class{i % 20:02d}")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"img{i:06d}.bin"), "wb") as f:
            f.write(rnd.randbytes(rnd.randint(low, high)))


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--rank":
        rank_main(*sys.argv[2:8])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--treebench", required=True)
    ap.add_argument("--preload", required=True)
    ap.add_argument("--mpiexec", default="mpiexec.mpich")
    ap.add_argument("--root", required=True)
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--node-size", type=int, default=2)
    ap.add_argument("--contexts", default="fork,spawn")
    ap.add_argument("--workers", type=int, default=2, help="DataLoader workers per rank")
    ap.add_argument("--scratch", help="where the runs' own files go (default: ROOT/scratch-"
                    "imagefolder; give a local directory when ROOT is a shaped PFS mount)")
    ap.add_argument("--file-size", metavar="MIN-MAX",
                    help="files of MIN..MAX bytes (random), 20 classes, written here instead of "
                    "larder-treebench's 1-2 KiB")
    ap.add_argument("--generate-in", metavar="DIR",
                    help="write a missing dataset here (the shaped PFS's export, where ROOT is "
                    "its mount) instead of through ROOT")
    ap.add_argument("--told", action="store_true",
                    help="add Larder told the order (larder.torch.DistributedSampler)")
    ap.add_argument("--compute", type=float, default=0.0, metavar="SECONDS",
                    help="compute time per batch (default 0)")
    ap.add_argument("--larder-env", action="append", default=[], metavar="LARDER_X=VALUE",
                    help="a setting for Larder's runs (repeatable)")
    args = ap.parse_args()
    suffix = f"-{args.file_size}" if args.file_size else ""
    tree = os.path.join(args.root, f"dataset-{args.files}{suffix}")
    if not os.path.exists(os.path.join(tree, ".complete")):
        where = os.path.join(args.generate_in, os.path.basename(tree)) if args.generate_in else tree
        shutil.rmtree(where, ignore_errors=True)
        if args.file_size:
            generate(where, args.files, *(int(x) for x in args.file_size.split("-")))
        else:
            subprocess.run([args.treebench, "generate", where, "--dataset", "--files",
                            str(args.files)], check=True, stdout=subprocess.DEVNULL)
        open(os.path.join(where, ".complete"), "w").close()
    scratch = args.scratch or os.path.join(args.root, "scratch-imagefolder")
    os.makedirs(scratch, exist_ok=True)
    dropped = True
    print(f"{args.files} files, {args.ranks} ranks on {args.ranks // args.node_size} emulated "
          f"nodes, DataLoader of {args.workers} workers")
    print()
    print("| context | side | ImageFolder built s | epoch 1 s | epoch 2 s | built + epoch 1 ÷ plain | "
          "epoch 2 ÷ plain | epoch 1 ÷ floor | epoch 2 ÷ floor | PFS reads |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    sides = [("plain", False, False), ("Larder", True, False)]
    if args.told:
        sides.append(("Larder told the order", True, True))
    floors = []
    for context in args.contexts.split(","):
        results = []
        for name, larder, told in sides:
            print(f"{context}: {name}", file=sys.stderr, flush=True)
            dropped = drop_caches() and dropped
            results.append((name, run(args, tree, context, larder, scratch, told)))
        plain = results[0][1]
        floor = plain["batches"] * args.compute
        floors.append(floor)
        p1 = plain["build"] + plain["epochs"][0]
        for name, r in results:
            if r["bytes"] != plain["bytes"]:
                sys.exit(f"{name}'s epochs read other bytes than plain's")
            mine = r is not plain
            l1 = r["build"] + r["epochs"][0]
            ratio1 = f"{l1 / p1:.2f} ×" if mine else ""
            ratio2 = f"{r['epochs'][1] / plain['epochs'][1]:.2f} ×" if mine else ""
            f1 = f"{r['epochs'][0] / floor:.2f} ×" if floor > 0 else ""
            f2 = f"{r['epochs'][1] / floor:.2f} ×" if floor > 0 else ""
            reads = f"{r['stats']['pfs']['read_ops']:,}" if mine else ""
            print(f"| {context} | {name} | {r['build']:.1f} | {r['epochs'][0]:.1f} | "
                  f"{r['epochs'][1]:.1f} | {ratio1} | {ratio2} | {f1} | {f2} | {reads} |",
                  flush=True)
            if mine and os.environ.get("IMAGEFOLDER_SHOW_STATS"):
                print(json.dumps({k: r["stats"].get(k) for k in ("pfs", "prefetch", "misses",
                                                                 "prefetches", "hits")}),
                      file=sys.stderr)
    if args.compute > 0:
        print()
        print(f"compute floor: {', '.join(f'{f:.1f} s' for f in floors)} per epoch "
              f"({plain['batches']} batches x {args.compute} s, the slowest rank's)")
    print()
    print(f"page cache dropped before each run: {'yes' if dropped else 'NO (not root)'}")


if __name__ == "__main__":
    main()
