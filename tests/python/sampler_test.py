#!/usr/bin/env python3
"""larder.torch.DistributedSampler (python/larder/torch.py) and the bindings it hands the order
through (larder.schedule, schedule_position, job in python/larder/__init__.py.in), without a
Larder session: `import larder` loads liblarder.so from the build tree, which starts nothing.

* The indices are torch's DistributedSampler's for every length, number of replicas, rank,
  shuffle, drop_last, seed and epoch; len() too; with Larder off and with a fake Larder running.
* What it hands: set_epoch(e) schedules epoch e's reads then epoch e+1's (appended), an iteration
  without set_epoch hands its own order, positions every 16 indices and at the end; how an index
  names its bytes (paths= sequence or callable, tuples, dataset.samples, dataset.imgs, the
  TypeError); failures never break the iteration; one warning per process without Larder;
  num_replicas and rank from torch.distributed, else from larder.job(), else torch's error.
* Pickling, and DataLoader workers (fork, spawn, forkserver).
* The ctypes bindings: what larder_schedule receives (through a C-callable fake), the errors of
  the loaded library (NOT_INITIALIZED, or NotImplementedError for an older library).

Usage: /usr/bin/python3 tests/python/sampler_test.py [--pythonpath build/release/python] [-v]
"""
import argparse
import ctypes
import os
import pathlib
import pickle
import sys
import tempfile
import unittest
import warnings
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _pythonpath():
    """--pythonpath (the build tree's python directory, which has the configured package);
    also for the DataLoader's spawned workers."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--pythonpath", default=os.path.join(ROOT, "build", "release", "python"))
    args, rest = parser.parse_known_args(sys.argv[1:])  # sys.argv intact for spawned workers
    path = os.path.abspath(args.pythonpath)
    if path not in sys.path:
        sys.path.insert(0, path)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [path] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    return path, rest


PYTHONPATH, UNITTEST_ARGS = _pythonpath()

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.utils.data  # noqa: E402
from torch.utils.data.distributed import DistributedSampler as TorchSampler  # noqa: E402

import larder  # noqa: E402
import larder.torch as lt  # noqa: E402

LENGTHS = (0, 1, 2, 7, 100, 1001)
REPLICAS = (1, 2, 3, 4, 7)
EPOCHS = (0, 1, 5)
REAL_SCHEDULE = larder.schedule


class Plain(torch.utils.data.Dataset):
    """A dataset that names no files: item i is i."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


class Folder(Plain):
    """torchvision's DatasetFolder's shape: samples[i] = (path, class)."""

    def __init__(self, n, root="/data/train"):
        super().__init__(n)
        self.samples = [(f"{root}/c{i % 3}/img_{i}.jpg", i % 3) for i in range(n)]


class OldFolder(Plain):
    """Only `imgs` (as torchvision's ImageFolder also has)."""

    def __init__(self, n):
        super().__init__(n)
        self.imgs = [(f"/data/old/img_{i}.png", 0) for i in range(n)]


def path_of(i):
    return f"/lus/data/f_{i}.bin"


class FakeLarder:
    """Stands in for a running Larder: larder.job, role, active, schedule, schedule_position
    patched on the module (larder.torch calls them through it); records every call."""

    def __init__(self, rank=0, size=1, active=True, schedule_error=None, position_error=None,
                 job_error=None):
        self.rank, self.size, self.is_active = rank, size, active
        self.job_error = job_error
        self.schedule_error, self.position_error = schedule_error, position_error
        self.calls = []
        self._patches = [mock.patch.object(larder, name, getattr(self, name))
                         for name in ("job", "role", "active", "schedule", "schedule_position")]

    def role(self):
        return "rank" if self.is_active else "off"

    def active(self):
        return self.is_active

    def job(self):
        if self.job_error:
            raise self.job_error
        return self.rank, self.size

    def schedule(self, reads, append=False):
        self.calls.append(("schedule", list(reads), append))
        if self.schedule_error:
            raise self.schedule_error

    def schedule_position(self, position):
        self.calls.append(("position", position))
        if self.position_error:
            raise self.position_error

    def schedules(self):
        return [c[1:] for c in self.calls if c[0] == "schedule"]

    def positions(self):
        return [c[1] for c in self.calls if c[0] == "position"]

    def __enter__(self):
        for p in self._patches:
            p.start()
        return self

    def __exit__(self, *exc):
        for p in reversed(self._patches):
            p.stop()


def sampler_warnings(record):
    return [w for w in record if issubclass(w.category, lt.LarderSamplerWarning)]


def quiet():
    """Keeps the sampler's warnings off the output (and forgets the ones it gave)."""
    lt._said.clear()
    return warnings.catch_warnings(record=True)


def grid():
    for n in LENGTHS:
        for replicas in REPLICAS:
            for rank in range(replicas):
                for shuffle in (True, False):
                    for drop_last in (True, False):
                        for seed in (0, 42):
                            yield n, replicas, rank, shuffle, drop_last, seed


class Indices(unittest.TestCase):
    """The same indices as torch's, by construction."""

    def check_grid(self, fake):
        combos = 0
        for n, replicas, rank, shuffle, drop_last, seed in grid():
            args = dict(num_replicas=replicas, rank=rank, shuffle=shuffle, seed=seed,
                        drop_last=drop_last)
            what = f"n={n} {args}"
            if fake is not None:
                fake.calls.clear()
            ours = lt.DistributedSampler(Plain(n), paths=path_of, **args)
            theirs = TorchSampler(Plain(n), **args)
            self.assertEqual(len(ours), len(theirs), what)
            self.assertEqual(list(ours), list(theirs), what)  # no set_epoch: epoch 0
            self.assertEqual(list(ours), list(theirs), what)  # and again
            for epoch in EPOCHS:
                ours.set_epoch(epoch)
                theirs.set_epoch(epoch)
                self.assertEqual(ours.epoch, epoch, what)
                if fake is not None:
                    following = TorchSampler(Plain(n), **args)
                    following.set_epoch(epoch + 1)
                    self.assertEqual(fake.schedules()[-2:],
                                     [([path_of(i) for i in theirs], False),
                                      ([path_of(i) for i in following], True)], what)
                self.assertEqual(list(ours), list(theirs), f"{what} epoch {epoch}")
                if fake is not None:
                    self.assertEqual(fake.positions()[-1], len(theirs), what)
                self.assertEqual(len(ours), len(theirs), what)
            combos += 1
        self.assertEqual(combos, 6 * sum(REPLICAS) * 8)

    def test_without_larder(self):
        self.assertFalse(larder.active(), "this test runs without a Larder session")
        with quiet():
            self.check_grid(None)

    def test_with_a_running_larder(self):
        with quiet(), FakeLarder() as fake:
            self.check_grid(fake)


class Handing(unittest.TestCase):
    def setUp(self):
        lt._said.clear()

    def test_set_epoch_hands_this_epoch_and_the_next(self):
        with FakeLarder(rank=1, size=3) as fake:
            s = lt.DistributedSampler(Folder(100), seed=7)
            self.assertEqual((s.num_replicas, s.rank), (3, 1))
            t = TorchSampler(Folder(100), num_replicas=3, rank=1, seed=7)
            s.set_epoch(3)
            self.assertEqual(s.epoch, 3)
            t.set_epoch(3)
            now = list(t)
            t.set_epoch(4)
            following = list(t)
            names = Folder(100).samples
            self.assertEqual(fake.calls, [
                ("schedule", [names[i][0] for i in now], False),
                ("schedule", [names[i][0] for i in following], True)])
            fake.calls.clear()
            self.assertEqual(list(s), now)
            # 34 indices: entry 16 and 32 reached, then the end
            self.assertEqual(fake.calls, [("position", 16), ("position", 32), ("position", 34)])

    def test_positions(self):
        for n, expected in ((0, [0]), (1, [1]), (16, [16]), (17, [16, 17]), (32, [16, 32]),
                            (100, [16, 32, 48, 64, 80, 96, 100])):
            with FakeLarder() as fake:
                s = lt.DistributedSampler(Plain(n), num_replicas=1, rank=0, paths=path_of)
                s.set_epoch(0)
                self.assertEqual(list(s), list(TorchSampler(Plain(n), num_replicas=1, rank=0)))
                self.assertEqual(fake.positions(), expected, f"n={n}")

    def test_iteration_without_set_epoch_hands_its_order(self):
        with FakeLarder() as fake:
            s = lt.DistributedSampler(Plain(40), num_replicas=2, rank=0, paths=path_of)
            self.assertEqual(fake.calls, [])  # nothing before the first order is known
            order = list(TorchSampler(Plain(40), num_replicas=2, rank=0))
            reads = [path_of(i) for i in order]
            self.assertEqual(list(s), order)
            # its order, then the same again (what the next iteration yields without set_epoch)
            self.assertEqual(fake.schedules(), [(reads, False), (reads, True)])
            self.assertEqual(fake.positions(), [16, 20])
            fake.calls.clear()
            self.assertEqual(list(s), order)  # a second iteration restarts the schedule
            self.assertEqual(fake.schedules(), [(reads, False), (reads, True)])
            fake.calls.clear()
            s.set_epoch(0)  # handed by set_epoch: the iteration hands nothing more
            self.assertEqual(len(fake.schedules()), 2)
            self.assertEqual(list(s), order)
            self.assertEqual(len(fake.schedules()), 2)

    def test_a_stale_iteration_reports_nothing(self):
        with FakeLarder() as fake:
            s = lt.DistributedSampler(Plain(100), num_replicas=1, rank=0, paths=path_of)
            s.set_epoch(0)
            it = iter(s)
            for _ in range(20):
                next(it)
            s.set_epoch(1)  # a new schedule while the old iteration is still alive
            fake.calls.clear()
            rest = list(it)
            self.assertEqual(len(rest), 80)
            self.assertEqual(fake.positions(), [], "an old iteration's positions are not sent")

    def test_iter_takes_the_epoch_when_called(self):
        # As torch's: iter() decides the order; a later set_epoch does not change it.
        with FakeLarder():
            s = lt.DistributedSampler(Plain(50), num_replicas=1, rank=0, paths=path_of)
            t = TorchSampler(Plain(50), num_replicas=1, rank=0)
            ours, theirs = iter(s), iter(t)
            s.set_epoch(1)
            t.set_epoch(1)
            self.assertEqual(list(ours), list(theirs))


class Naming(unittest.TestCase):
    def setUp(self):
        lt._said.clear()

    def reads_of(self, dataset, **kw):
        with FakeLarder() as fake:
            s = lt.DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=False, **kw)
            s.set_epoch(0)
            return fake.schedules()[0][0]

    def test_paths_sequence_and_callable(self):
        names = [f"/p/{i}" for i in range(5)]
        self.assertEqual(self.reads_of(Plain(5), paths=names), names)
        self.assertEqual(self.reads_of(Plain(5), paths=tuple(names)), names)
        self.assertEqual(self.reads_of(Plain(5), paths=lambda i: names[i]), names)
        # paths= wins over dataset.samples
        self.assertEqual(self.reads_of(Folder(5), paths=names), names)

    def test_tuples_bytes_pathlike_relative(self):
        entries = {0: ("/a/x.tar", 0, 512), 1: ["/a/x.tar", 512, 100], 2: pathlib.Path("/b/y"),
                   3: b"/c/z", 4: "rel/../w", 5: ("rel.bin", 4, 0), 6: b"rb"}
        reads = self.reads_of(Plain(7), paths=entries.get)
        cwd = os.getcwd()
        self.assertEqual(reads, [("/a/x.tar", 0, 512), ("/a/x.tar", 512, 100), "/b/y", b"/c/z",
                                 os.path.join(cwd, "rel/../w"),
                                 (os.path.join(cwd, "rel.bin"), 4, 0),
                                 os.path.join(os.getcwdb(), b"rb")])

    def test_dataset_samples_and_imgs(self):
        self.assertEqual(self.reads_of(Folder(4)), [f"/data/train/c{i % 3}/img_{i}.jpg"
                                                    for i in range(4)])
        self.assertEqual(self.reads_of(OldFolder(3)), [f"/data/old/img_{i}.png"
                                                       for i in range(3)])
        relative = Folder(2, root="train")
        self.assertEqual(self.reads_of(relative),
                         [os.path.join(os.getcwd(), f"train/c{i}/img_{i}.jpg") for i in range(2)])

    def test_the_type_error(self):
        with FakeLarder(), self.assertRaises(TypeError) as raised:
            lt.DistributedSampler(Plain(5), num_replicas=1, rank=0)
        message = str(raised.exception)
        for name in ("paths=", "dataset.samples", "dataset.imgs"):
            self.assertIn(name, message)
        with FakeLarder(), self.assertRaises(TypeError):
            lt.DistributedSampler(Plain(5), num_replicas=1, rank=0, paths="/one/path")
        with FakeLarder(), self.assertRaises(ValueError):
            lt.DistributedSampler(Plain(5), num_replicas=1, rank=0, paths=["/a", "/b"])
        # Without Larder nothing names anything: torch's sampler, no error
        with FakeLarder(active=False) as fake, quiet():
            s = lt.DistributedSampler(Plain(5), num_replicas=1, rank=0)
            t = TorchSampler(Plain(5), num_replicas=1, rank=0)
            s.set_epoch(1)
            t.set_epoch(1)
            self.assertEqual(list(s), list(t))
            self.assertEqual(fake.calls, [])


class WithoutLarder(unittest.TestCase):
    def setUp(self):
        lt._said.clear()

    def test_one_warning_per_process_and_no_calls(self):
        with FakeLarder(active=False) as fake, warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            for _ in range(3):
                s = lt.DistributedSampler(Folder(30), num_replicas=2, rank=1)
                s.set_epoch(2)
                list(s)
            self.assertEqual(fake.calls, [])
            said = sampler_warnings(record)
            self.assertEqual(len(said), 1, [str(w.message) for w in said])
            self.assertIn("prefetches nothing", str(said[0].message))
            self.assertIs(type(iter(s)), type(iter(TorchSampler(Folder(30), 2, 1))))

    def test_a_worker_process_hands_nothing(self):
        # A DataLoader worker under the preload: its reads are served (active) but it has no
        # Larder of its own (role 'worker'): as without Larder.
        with FakeLarder() as fake, mock.patch.object(larder, "role", lambda: "worker"), \
                warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            s = lt.DistributedSampler(Plain(30), num_replicas=3, rank=2)  # no naming: no error
            s.set_epoch(1)
            t = TorchSampler(Plain(30), num_replicas=3, rank=2)
            t.set_epoch(1)
            self.assertEqual(list(s), list(t))
            self.assertEqual(fake.calls, [])
            said = sampler_warnings(record)
            self.assertEqual(len(said), 1)
            self.assertIn("'worker'", str(said[0].message))

    def test_the_real_module_is_off(self):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            s = lt.DistributedSampler(Plain(10), num_replicas=1, rank=0)
            t = TorchSampler(Plain(10), num_replicas=1, rank=0)
            s.set_epoch(1)
            t.set_epoch(1)
            self.assertEqual(list(s), list(t))
        self.assertEqual(len(sampler_warnings(record)), 1)

    def test_schedule_errors_never_break_iteration(self):
        error = larder.LarderError(7, "larder is not initialized")
        with FakeLarder(schedule_error=error) as fake, \
                warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            s = lt.DistributedSampler(Plain(50), num_replicas=2, rank=1, paths=path_of)
            t = TorchSampler(Plain(50), num_replicas=2, rank=1)
            for epoch in range(3):
                s.set_epoch(epoch)
                t.set_epoch(epoch)
                self.assertEqual(list(s), list(t))
            self.assertEqual(len(fake.schedules()), 1, "it stops handing after a failure")
            said = sampler_warnings(record)
            self.assertEqual(len(said), 1)
            self.assertIn("LARDER_ERR_NOT_INITIALIZED", str(said[0].message))

    def test_an_older_library(self):
        # larder.schedule itself, with larder_schedule missing from the loaded library.
        with FakeLarder(), mock.patch.object(larder, "schedule", REAL_SCHEDULE), \
                mock.patch.object(larder, "_larder_schedule", None), \
                warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            s = lt.DistributedSampler(Plain(20), num_replicas=1, rank=0, paths=path_of)
            s.set_epoch(0)
            self.assertEqual(list(s), list(TorchSampler(Plain(20), num_replicas=1, rank=0)))
            said = sampler_warnings(record)
            self.assertEqual(len(said), 1)
            self.assertIn("NotImplementedError", str(said[0].message))

    def test_position_errors_never_break_iteration(self):
        with FakeLarder(position_error=larder.LarderError(10, "boom")) as fake, \
                warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            s = lt.DistributedSampler(Plain(100), num_replicas=1, rank=0, paths=path_of)
            s.set_epoch(0)
            self.assertEqual(list(s), list(TorchSampler(Plain(100), num_replicas=1, rank=0)))
            self.assertEqual(fake.positions(), [16], "no more positions after a failure")
            self.assertEqual(len(sampler_warnings(record)), 1)


class Place(unittest.TestCase):
    """num_replicas and rank: torch.distributed's, else Larder's job, else torch's error."""

    def setUp(self):
        lt._said.clear()

    def test_from_larder(self):
        with FakeLarder(rank=2, size=4):
            s = lt.DistributedSampler(Folder(10))
            self.assertEqual((s.num_replicas, s.rank), (4, 2))
            s = lt.DistributedSampler(Folder(10), num_replicas=8)
            self.assertEqual((s.num_replicas, s.rank), (8, 2))
            s = lt.DistributedSampler(Folder(10), rank=0)
            self.assertEqual((s.num_replicas, s.rank), (4, 0))

    def torch_error(self, **kw):
        try:
            TorchSampler(Plain(10), **kw)
        except Exception as e:
            return type(e), str(e)
        self.fail("torch's sampler raised nothing")

    def test_without_either_as_torch(self):
        self.assertFalse(dist.is_initialized())
        expected = self.torch_error()
        with quiet():
            # Larder off; Larder running but larder.job() failing (an older library)
            for fake in (FakeLarder(active=False),
                         FakeLarder(job_error=NotImplementedError("no larder_job"))):
                with fake, self.assertRaises(expected[0]) as raised:
                    lt.DistributedSampler(Plain(10), paths=path_of)
                self.assertEqual(str(raised.exception), expected[1])
        with quiet(), FakeLarder(active=False), self.assertRaises(ValueError):
            lt.DistributedSampler(Plain(10), num_replicas=2, rank=2)

    def test_torch_distributed_first(self):
        with tempfile.TemporaryDirectory() as tmp:
            dist.init_process_group("gloo", init_method=f"file://{tmp}/store", rank=0,
                                    world_size=1)
            try:
                with FakeLarder(rank=3, size=5):
                    s = lt.DistributedSampler(Folder(10))
                    self.assertEqual((s.num_replicas, s.rank), (1, 0))
            finally:
                dist.destroy_process_group()


class Processes(unittest.TestCase):
    def setUp(self):
        lt._said.clear()

    def test_pickle(self):
        with FakeLarder(rank=1, size=2) as fake:
            s = lt.DistributedSampler(Folder(40), seed=3, paths=[f"/p/{i}" for i in range(40)])
            s.set_epoch(2)
            for value in vars(s).values():
                self.assertFalse(type(value).__module__.startswith("ctypes"), value)
            copy = pickle.loads(pickle.dumps(s))
            fake.calls.clear()
            self.assertEqual(list(copy), list(s))
        self.assertEqual((copy.num_replicas, copy.rank, copy.epoch), (2, 1, 2))

    def test_dataloader_workers(self):
        t = TorchSampler(Folder(24), num_replicas=2, rank=0, seed=5)
        t.set_epoch(1)
        expected = [b.tolist() for b in torch.utils.data.DataLoader(Folder(24), batch_size=4,
                                                                    sampler=t)]
        for context in ("fork", "spawn", "forkserver"):
            with FakeLarder(rank=0, size=2) as fake:
                s = lt.DistributedSampler(Folder(24), seed=5)
                s.set_epoch(1)
                loader = torch.utils.data.DataLoader(Folder(24), batch_size=4, sampler=s,
                                                     num_workers=1,
                                                     multiprocessing_context=context)
                self.assertEqual([b.tolist() for b in loader], expected, context)
                self.assertEqual(fake.positions(), [12], context)


class Bindings(unittest.TestCase):
    """larder.schedule, schedule_position and job over the C API."""

    def test_the_loaded_library(self):
        self.assertEqual(larder.role(), "off")
        calls = ((larder.schedule, (["/x"],)), (larder.schedule_position, (3,)),
                 (larder.job, ()))
        for fn, args in calls:
            if larder._larder_schedule is None:  # an older liblarder: a clear error
                with self.assertRaisesRegex(NotImplementedError, "older than this package"):
                    fn(*args)
            else:
                with self.assertRaises(larder.LarderError) as raised:
                    fn(*args)
                self.assertEqual(raised.exception.name, "LARDER_ERR_NOT_INITIALIZED")

    def test_missing_functions(self):
        self.assertIsNone(larder._optional("larder_no_such_function", []))
        for name in ("_larder_schedule", "_larder_schedule_position", "_larder_job"):
            with mock.patch.object(larder, name, None):
                with self.assertRaisesRegex(NotImplementedError, name[1:]):
                    {"_larder_schedule": lambda: larder.schedule([]),
                     "_larder_schedule_position": lambda: larder.schedule_position(0),
                     "_larder_job": larder.job}[name]()

    def test_what_larder_schedule_receives(self):
        got = []

        @ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(larder._Read), ctypes.c_size_t,
                          ctypes.c_uint)
        def fake(reads, n, flags):
            got.append(([(reads[i].path, reads[i].offset, reads[i].length) for i in range(n)],
                        flags))
            return 0

        reads = ["/a", b"/bb", pathlib.Path("/ccc"), ("/d", 5, 7), ["", 0, 2**64 - 1],
                 "/\u00e9\udcff", (b"/e", 1, 0)]
        expected = [(b"/a", 0, 0), (b"/bb", 0, 0), (b"/ccc", 0, 0), (b"/d", 5, 7),
                    (b"", 0, 2**64 - 1), (b"/\xc3\xa9\xff", 0, 0), (b"/e", 1, 0)]
        for packed in (True, False):
            got.clear()
            with mock.patch.object(larder, "_larder_schedule", fake), \
                    mock.patch.object(larder, "_READ_AS_WORDS", packed and larder._READ_AS_WORDS):
                larder.schedule(reads)
                larder.schedule(iter(reads), append=True)
                larder.schedule([])
                self.assertEqual(got, [(expected, 0), (expected, 1), ([], 0)])
                for bad, error in ((("/x", -1, 0), ValueError), (("/x", 1.5, 0), TypeError),
                                   (("/x",), TypeError), (5, TypeError), ("/a\0b", ValueError),
                                   ((b"/x\0", 0, 0), ValueError), (("/x", 0, 2**64), ValueError)):
                    with self.assertRaises(error, msg=repr(bad)):
                        larder.schedule(["/ok", bad])
                self.assertEqual(len(got), 3, "nothing is handed when an entry is wrong")

    def test_schedule_position_and_job(self):
        positions = []
        position_fn = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64)(
            lambda p: positions.append(p) or 0)

        @ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int),
                          ctypes.POINTER(ctypes.c_int))
        def job_fn(rank_p, size_p):
            rank_p[0], size_p[0] = 5, 8
            return 0

        with mock.patch.object(larder, "_larder_schedule_position", position_fn), \
                mock.patch.object(larder, "_larder_job", job_fn):
            larder.schedule_position(0)
            larder.schedule_position(2**64 - 1)
            with self.assertRaises(ValueError):
                larder.schedule_position(-1)
            self.assertEqual(positions, [0, 2**64 - 1])
            self.assertEqual(larder.job(), (5, 8))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + UNITTEST_ARGS)
