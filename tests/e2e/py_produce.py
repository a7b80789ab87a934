"""One rank of e2e_produce: 4 ranks on 2 emulated nodes (ranks 0, 1 on node 0; 2, 3 on node 1)
with LARDER_PRODUCE=<data>/out and inputs under LARDER_PREFIX=<data>.

    py_produce.py <data dir> <scratch dir outside the prefixes> <result prefix>

rank 0  produces files of awkward sizes with every write pattern (write, seeks, pwrite,
        ftruncate, stdio, mmap, rename of a finished temporary file inside and from outside the
        prefix), numpy and torch files, and holds one file open while rank 1 tries to produce it
rank 1  produces through a forked and a spawned worker, has a worker die while producing, and
        checks the write-once errors (EEXIST while rank 0 holds the file, EROFS once published)
rank 2, 3  (the other node) open half of the files before they exist (they wait) and the rest
        after, and compare every byte with what the producer wrote; read the inputs

Ranks meet through produced files themselves (a reader of a file not produced yet waits for it).
Each rank writes <result prefix>.<rank> (JSON): the files it checked, its errors, times."""
import ctypes
import errno
import json
import mmap
import multiprocessing
import os
import signal
import sys
import time
import zlib

import numpy as np

CHUNK = 64 << 10  # LARDER_CHUNK of the test
BIG = 50 << 20
SIZES = [0, 1, CHUNK - 1, CHUNK, CHUNK + 1]
PATTERNS = ["write", "seek", "pwrite", "truncate", "stdio", "mmap", "rename_in", "rename_from"]


def content(name, size):
    seed = zlib.crc32(name.encode())
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes()


def names():
    """Every (name, size) rank 0 produces with the patterns; the big one first (early)."""
    out = [("write", BIG)]
    out += [(p, s) for p in PATTERNS for s in SIZES]
    return [(f"{p}-{s}.bin", p, s) for p, s in out]


def produce(out, scratch, name, pattern, size):
    path = os.path.join(out, name)
    data = content(name, size)
    half = size // 2
    if pattern == "write":
        with open(path, "wb") as f:
            f.write(data)
    elif pattern == "seek":  # second half first, then the first, through lseek
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.lseek(fd, half, os.SEEK_SET)
        os.write(fd, data[half:])
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, data[:half])
        os.close(fd)
    elif pattern == "pwrite":  # pieces in reverse order
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        step = max(1, size // 3 + 1)
        for at in reversed(range(0, size, step)):
            os.pwrite(fd, data[at:at + step], at)
        os.close(fd)
    elif pattern == "truncate":  # grown past the end, written, then cut back
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        os.ftruncate(fd, size + 12345)
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, size)
        os.close(fd)
    elif pattern == "stdio":  # fopen / fwrite / fclose of the C library
        libc = ctypes.CDLL(None, use_errno=True)
        libc.fopen.restype = ctypes.c_void_p
        libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        libc.fwrite.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_size_t, ctypes.c_void_p]
        libc.fclose.argtypes = [ctypes.c_void_p]
        f = libc.fopen(path.encode(), b"wb")
        assert f, os.strerror(ctypes.get_errno())
        if size:
            assert libc.fwrite(data, 1, size, f) == size
        assert libc.fclose(f) == 0
    elif pattern == "mmap":  # written through a shared mapping; the descriptor closed first
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        if size:
            os.ftruncate(fd, size)
            m = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            os.close(fd)
            m[:] = data
            m.flush()
            m.close()  # munmap: the last reference, the file is published
        else:
            os.close(fd)
    elif pattern == "rename_in":  # the atomic-save pattern inside the prefix
        tmp = os.path.join(out, "." + name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    elif pattern == "rename_from":  # a file written elsewhere, renamed into the prefix
        tmp = os.path.join(scratch, name + ".part")
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        assert not os.path.exists(tmp), "a rename moves the file"
    return time.time()


def mark(out, name):
    with open(os.path.join(out, name), "wb") as f:
        f.write(b"1")


def wait_for(out, name):
    with open(os.path.join(out, name), "rb") as f:  # a reader waits until it is produced
        f.read()


def write_error(path):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        os.close(fd)
        return 0
    except OSError as e:
        return e.errno


def rank0(out, scratch, result):
    wait_for(out, "ready-2")
    wait_for(out, "ready-3")
    published = {}
    for name, pattern, size in names():
        published[name] = produce(out, scratch, name, pattern, size)
    np.save(os.path.join(out, "array.npy"), np.arange(300000, dtype=np.float64))
    np.savez(os.path.join(out, "arrays.npz"), a=np.arange(1000), b=np.ones((30, 40)))
    import torch
    torch.manual_seed(7)
    torch.save({"w": torch.randn(200, 300), "step": 12}, os.path.join(out, "model.pt"))
    # Held open while rank 1 tries to produce it too.
    held = open(os.path.join(out, "held.bin"), "wb")
    held.write(content("held.bin", 1000))
    mark(out, "holding")
    wait_for(out, "tried")
    held.close()
    mark(out, "done")
    result["published"] = published


def child_produce(out, name, size):
    with open(os.path.join(out, name), "wb") as f:
        f.write(content(name, size))


def child_die(out):
    fd = os.open(os.path.join(out, "dead.bin"), os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"x" * 1000)
    os.kill(os.getpid(), signal.SIGKILL)


def rank1(out, result):
    for method, name in (("fork", "w-fork.bin"), ("spawn", "w-spawn.bin")):
        ctx = multiprocessing.get_context(method)
        p = ctx.Process(target=child_produce, args=(out, name, 3 * CHUNK + 7))
        p.start()
        p.join()
        assert p.exitcode == 0, (method, p.exitcode)
    p = multiprocessing.get_context("fork").Process(target=child_die, args=(out,))
    p.start()
    p.join()
    result["dead_exit"] = p.exitcode
    wait_for(out, "holding")
    result["second_producer"] = errno.errorcode.get(write_error(os.path.join(out, "held.bin")), "0")
    mark(out, "tried")
    wait_for(out, "held.bin")
    result["writer_of_published"] = errno.errorcode.get(
        write_error(os.path.join(out, "held.bin")), "0")


def read_file(path):
    start = time.time()
    with open(path, "rb") as f:
        data = f.read()
    return data, start, time.time()


def consumer(data_dir, out, rank, result):
    checks = {}
    early = [n for i, n in enumerate(names()) if i % 2 == 0]
    late = [n for i, n in enumerate(names()) if i % 2 == 1]
    mark(out, f"ready-{rank}")
    for name, _, size in early:  # most of these are not produced yet: the open waits
        got, start, end = read_file(os.path.join(out, name))
        checks[name] = {"ok": got == content(name, size), "start": start, "end": end}
    wait_for(out, "done")
    for name, _, size in late:
        got, start, end = read_file(os.path.join(out, name))
        checks[name] = {"ok": got == content(name, size), "start": start, "end": end}
    for name in ("w-fork.bin", "w-spawn.bin"):
        got, _, _ = read_file(os.path.join(out, name))
        checks[name] = {"ok": got == content(name, 3 * CHUNK + 7)}
    checks["held.bin"] = {"ok": read_file(os.path.join(out, "held.bin"))[0] ==
                          content("held.bin", 1000)}
    # numpy, torch, and a produced file mapped (its node file on this node)
    a = np.load(os.path.join(out, "array.npy"))
    checks["array.npy"] = {"ok": bool((a == np.arange(300000, dtype=np.float64)).all())}
    m = np.load(os.path.join(out, "array.npy"), mmap_mode="r")
    checks["array.npy mmap"] = {"ok": bool((m == np.arange(300000, dtype=np.float64)).all())}
    del m
    z = np.load(os.path.join(out, "arrays.npz"))
    checks["arrays.npz"] = {"ok": bool((z["a"] == np.arange(1000)).all() and
                                       (z["b"] == np.ones((30, 40))).all())}
    import torch
    torch.manual_seed(7)
    want = torch.randn(200, 300)
    got = torch.load(os.path.join(out, "model.pt"))
    checks["model.pt"] = {"ok": bool(torch.equal(got["w"], want) and got["step"] == 12)}
    # Inputs under LARDER_PREFIX, read-only, beside the produced files.
    for i in range(3):
        name = f"input-{i}.bin"
        got = open(os.path.join(data_dir, "in", name), "rb").read()
        checks[name] = {"ok": got == content(name, 5 * CHUNK + i)}
    # A published file is read-only; a producer that died leaves the PFS's answer.
    result["writer_of_published"] = errno.errorcode.get(
        write_error(os.path.join(out, "write-1.bin")), "0")
    start = time.time()
    try:
        open(os.path.join(out, "dead.bin"), "rb").read()
        result["dead"] = "read"
    except OSError as e:
        result["dead"] = errno.errorcode.get(e.errno, str(e.errno))
    result["dead_seconds"] = time.time() - start
    result["checks"] = checks


def main():
    data_dir, scratch, prefix = sys.argv[1:4]
    rank = int(os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0")))
    out = os.path.join(data_dir, "out")
    result = {"rank": rank}
    if rank == 0:
        rank0(out, scratch, result)
    elif rank == 1:
        rank1(out, result)
    else:
        consumer(data_dir, out, rank, result)
    with open(f"{prefix}.{rank}", "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
