"""e2e_workers_*: DataLoader workers find what their node holds without asking their rank
(runtime/agent/node_view.hpp). 4 ranks on 2 emulated nodes read a tree of small files (and a
few of several chunks) through a DataLoader of 2 workers, started with fork, spawn or forkserver
and not kept between epochs, so each epoch's workers start knowing nothing. Checks: every file
every worker read has the bytes a direct read gives, in every epoch; the first epoch's requests
to the ranks are at most a few per file (the node's misses); a warm epoch sends none per file
(`workers.lookups`, `workers.places`, `workers.reads` do not grow: every stat answer and chunk
place was found in the node's table, `workers.answers_found` and `workers.places_found`); and
with LARDER_REVALIDATE=1 and a pause between epochs, answers due for their check go to the rank
(which renews them once for the node) and the bytes stay right. Every process exits and no
Larder file is left."""
import argparse
import hashlib
import json
import os
import random

from e2e_util import PYTHON, Job, check, common_args

HERE = os.path.dirname(os.path.abspath(__file__))
RANKS = 4
CLASSES = 4
PER_CLASS = 60


def make_data(root):
    rng = random.Random(48)
    digests = {}
    for c in range(CLASSES):
        d = os.path.join(root, f"class{c}")
        os.makedirs(d)
        for i in range(PER_CLASS):
            # Mostly small files (loaded whole), some of several 64 KiB chunks, one empty.
            n = 0 if (c, i) == (0, 0) else (
                rng.randint(1, 40_000) if i % 10 else rng.randint(70_000, 300_000))
            data = rng.randbytes(n)
            name = f"f{i:03d}.bin"
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
            digests[f"class{c}/{name}"] = hashlib.sha1(data).hexdigest()
    return digests


def run(job, args, context, digests, revalidate, tag):
    out = os.path.join(job.root, f"out-{tag}")
    extra = {"GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1", "PYTHONPATH": args.pythonpath,
             "LARDER_NODE_SIZE": "2", "LARDER_REVALIDATE": revalidate,
             "LPL_EPOCH_PAUSE": "2.5" if revalidate != "off" else "0"}
    env = job.python_env(job.env(extra=extra))
    epochs = 3
    job.mpiexec(RANKS, [PYTHON, os.path.join(HERE, "py_workers.py"), job.data, out, context,
                        str(epochs)], env, timeout=240)
    results = [json.load(open(f"{out}.{r}")) for r in range(RANKS)]
    for e in range(epochs):
        seen = {}
        for r in results:
            seen.update(r["epochs"][e])
        wrong = [p for p, h in seen.items() if digests.get(p) != h]
        check(not wrong and len(seen) == len(digests),
              f"{context}, LARDER_REVALIDATE={revalidate}, epoch {e + 1}: every file the workers "
              f"read has its bytes ({len(seen)} of {len(digests)} files, {len(wrong)} wrong)")
    return [r["requests"] for r in results]


def main():
    parser = common_args(argparse.ArgumentParser())
    parser.add_argument("--pythonpath", required=True)
    parser.add_argument("--contexts", default="fork,spawn,forkserver")
    args = parser.parse_args()
    job = Job(args, "workers")
    try:
        digests = make_data(job.data)
        files = len(digests)
        for context in args.contexts.split(","):
            requests = run(job, args, context, digests, "off", context)
            asked = lambda r: r["lookups"] + r["places"] + r["reads"]  # noqa: E731
            first = sum(asked(r[0]) for r in requests)
            warm = [sum(asked(r[e]) for r in requests) for e in (1, 2)]
            found = sum(r[e]["answers_found"] for r in requests for e in (1, 2))
            print(f"{context}: requests per epoch {[first] + warm}, "
                  f"answers found in the node table in warm epochs {found}", flush=True)
            check(first <= 3 * files, f"{context}: the cold epoch asked the ranks at most a few "
                  f"times per file ({first} requests for {files} files)")
            check(warm == [0, 0], f"{context}: warm epochs sent no request per file ({warm})")
            check(found >= 2 * (files - 1), f"{context}: warm epochs found every stat answer in "
                  f"the node's table ({found})")
        # Answers due for their check (LARDER_REVALIDATE) are the rank's to renew.
        requests = run(job, args, "fork", digests, "1", "revalidate")
        renewed = sum(r[e]["lookups"] for r in requests for e in (1, 2))
        check(renewed > 0, f"answers older than LARDER_REVALIDATE went to the ranks ({renewed})")
        job.finish()
    finally:
        job.close()


if __name__ == "__main__":
    main()
