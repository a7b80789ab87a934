"""PyTorch's DistributedSampler that tells Larder the order of the reads: one line to change.

    from larder.torch import DistributedSampler   # instead of torch.utils.data.distributed's

    sampler = DistributedSampler(dataset)          # torch's arguments, plus paths=
    loader = DataLoader(dataset, sampler=sampler, batch_size=..., num_workers=...)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)                   # hands Larder epoch's and epoch+1's reads
        for batch in loader:
            ...

The indices are torch's own (this class is a subclass and takes them from torch's __iter__), for
every argument and epoch. What it adds: set_epoch(e) hands Larder (larder.schedule) the reads of
epoch e's indices on this rank, in order, and then epoch e+1's, appended, so that the next epoch's
first files are on the node while this one ends; iterating reports how far the reads have got
(larder.schedule_position) every 16 indices and at the end. A dataset index names its file
through `paths=` (a sequence, paths[i], or a callable, paths(i); each a path or a
(path, offset, length) tuple), else dataset.samples[i][0] (torchvision's DatasetFolder,
ImageFolder), else dataset.imgs[i][0]; relative paths are taken from the current directory.

Without a running Larder in this process (larder.role() is not 'rank') it is torch's sampler and
prefetches nothing; it says so once per process with a warning (LarderSamplerWarning, a
UserWarning). A failure to hand the
order never breaks the iteration: one warning, and the sampler goes on as torch's.
"""
import os
import warnings

import torch.distributed
import torch.utils.data.distributed

import larder

__all__ = ["DistributedSampler", "LarderSamplerWarning"]

# Positions are reported every this many indices (and at the end of an epoch).
POSITION_EVERY = 16

_NAMING_HELP = ("larder.torch.DistributedSampler: cannot tell which file a dataset index reads: "
                "pass paths= (a sequence or a callable: index -> path or (path, offset, "
                "length)), or use a dataset with dataset.samples or dataset.imgs (torchvision's "
                "DatasetFolder, ImageFolder); {what}")


class LarderSamplerWarning(UserWarning):
    """larder.torch.DistributedSampler prefetches nothing (Larder does not run, or handing the
    order failed); the indices are torch's all the same."""


_said = set()  # the warnings this process has given (each once)


def _say_once(key, message):
    if key in _said:
        return
    _said.add(key)
    warnings.warn(message, LarderSamplerWarning)


def _role():
    try:
        return larder.role()
    except Exception:
        return "off"


def _larder_running():
    """Larder runs in this process: role 'rank'. Not in a worker ('worker': its reads are served
    through its rank, but it has no schedule of its own) nor without Larder ('off')."""
    return _role() == "rank"


def _default_place(num_replicas, rank):
    """num_replicas and rank where the caller left them None: torch.distributed's when it is
    initialised (torch fills them in), else Larder's job, else None (torch decides, and raises
    as it does)."""
    if num_replicas is not None and rank is not None:
        return num_replicas, rank
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return num_replicas, rank
    if _larder_running():
        try:
            job_rank, job_size = larder.job()
        except Exception:  # an older liblarder, or Larder not running here after all
            return num_replicas, rank
        if num_replicas is None:
            num_replicas = job_size
        if rank is None:
            rank = job_rank
    return num_replicas, rank


def _absolute_read(entry):
    """A path or (path, offset, length) with the path absolute (joined to the current
    directory when relative)."""
    if isinstance(entry, (tuple, list)):
        path, offset, length = entry
        return (_absolute_read(path), offset, length)
    path = os.fspath(entry)
    if os.path.isabs(path):
        return path
    return os.path.join(os.getcwdb() if isinstance(path, bytes) else os.getcwd(), path)


class DistributedSampler(torch.utils.data.distributed.DistributedSampler):
    """torch.utils.data.distributed.DistributedSampler that hands Larder each epoch's reads.

    Arguments as torch's; num_replicas and rank default to torch.distributed's world size and
    rank when it is initialised, else to Larder's job (larder.job()) when Larder runs in this
    process, else torch decides (and raises as it does). paths: how a dataset index names the
    bytes it reads: a sequence (paths[i]) or a callable (paths(i)), each giving a path or a
    (path, offset, length) tuple (length 0: to the end of the file); by default
    dataset.samples[i][0], else dataset.imgs[i][0]. Relative paths are made absolute here (from
    the current directory at set_epoch or iteration).
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False, *, paths=None):
        num_replicas, rank = _default_place(num_replicas, rank)
        super().__init__(dataset, num_replicas=num_replicas, rank=rank, shuffle=shuffle,
                         seed=seed, drop_last=drop_last)
        if isinstance(paths, (str, bytes, os.PathLike)):
            raise TypeError(_NAMING_HELP.format(what=f"paths= is one path ({paths!r}), not one "
                                                     "per index"))
        if paths is not None and not callable(paths) and not hasattr(paths, "__getitem__"):
            raise TypeError(_NAMING_HELP.format(what=f"paths= is a {type(paths).__name__}"))
        self.paths = paths
        self._handed_epoch = None  # the epoch whose order starts Larder's schedule
        self._handed_fresh = False  # no iteration has used that schedule yet
        self._handouts = 0  # schedules handed; an iteration reports positions into its own only
        self._given_up = False  # handing failed once: as torch's from then on
        if _larder_running():
            self._check_naming()
        else:
            self._say_off()

    # ---- Which bytes an index reads ----------------------------------------------------------

    def _check_naming(self):
        """TypeError unless an index can be named (paths=, dataset.samples, dataset.imgs)."""
        if self.paths is not None:
            if not callable(self.paths):
                try:
                    n = len(self.paths)
                except TypeError:
                    return
                if n < len(self.dataset):
                    raise ValueError(f"larder.torch.DistributedSampler: paths= has {n} entries "
                                     f"for a dataset of {len(self.dataset)}")
            return
        for name in ("samples", "imgs"):
            if getattr(self.dataset, name, None) is not None:
                return
        raise TypeError(_NAMING_HELP.format(
            what=f"{type(self.dataset).__name__} has neither"))

    def _names(self, indices):
        """What names each index's bytes (paths=, dataset.samples, dataset.imgs), in order."""
        if self.paths is not None:
            get = self.paths if callable(self.paths) else self.paths.__getitem__
            return [get(i) for i in indices]
        for attribute in ("samples", "imgs"):
            table = getattr(self.dataset, attribute, None)
            if table is not None:
                return [table[i][0] for i in indices]
        self._check_naming()  # raises
        raise AssertionError("unreachable")

    def reads(self, indices):
        """The reads of these dataset indices, in order, as the sampler hands them to Larder:
        each an absolute path or a (path, offset, length) tuple with an absolute path. A relative
        path is taken from the current directory (joined to it, not normalised: ".." after a
        symlink means what it means to open()); an absolute one is handed as it is."""
        reads = self._names(indices)
        for k, entry in enumerate(reads):
            if type(entry) is str and entry.startswith("/"):
                continue  # the usual entry, as it is
            reads[k] = _absolute_read(entry)
        return reads

    # ---- Handing the order -------------------------------------------------------------------

    def _say_off(self):
        _say_once("off", "larder.torch.DistributedSampler: Larder does not run in this process "
                         f"(larder.role() is {_role()!r}): it prefetches nothing and samples "
                         "exactly as torch's DistributedSampler")

    def _indices_of(self, epoch):
        """torch's indices for `epoch`, self.epoch left as it was."""
        saved = self.epoch
        self.epoch = epoch
        try:
            return list(super().__iter__())
        finally:
            self.epoch = saved

    def _can_hand(self):
        """True when Larder runs here and this sampler has not given up; a TypeError (of the
        program's) when Larder runs and an index cannot name its file."""
        if self._given_up:
            return False
        if not _larder_running():
            self._say_off()
            return False
        self._check_naming()
        return True

    def _hand(self, epoch, indices, next_indices):
        """Hands Larder `indices` (epoch `epoch`'s, replacing the schedule) and then
        `next_indices` (appended). False when that failed (said once; torch's from then on)."""
        try:
            reads = self.reads(indices)
            larder.schedule(reads, append=False)
            self._handed_epoch, self._handed_fresh = epoch, True
            self._handouts += 1
            larder.schedule(reads if next_indices is indices else self.reads(next_indices),
                            append=True)
        except Exception as e:  # never break the iteration: go on as torch's sampler
            self._give_up(f"cannot hand Larder the order ({type(e).__name__}: {e})")
            return False
        return True

    def _give_up(self, why):
        self._given_up = True
        _say_once("failed", f"larder.torch.DistributedSampler: {why}: it prefetches nothing from "
                            "now on and samples as torch's DistributedSampler")

    def set_epoch(self, epoch):
        """torch's set_epoch; then hands Larder this epoch's reads on this rank, in order, and the
        next epoch's after them (so that it starts on the next epoch's while this one ends)."""
        super().set_epoch(epoch)
        if self._can_hand():
            self._hand(epoch, list(super().__iter__()), self._indices_of(epoch + 1))

    def __iter__(self):
        indices = list(super().__iter__())
        if not self._can_hand():
            return iter(indices)
        if not (self._handed_fresh and self._handed_epoch == self.epoch):
            # set_epoch was not called for this iteration: hand this order, and after it the
            # same again (what the next iteration yields unless set_epoch is called).
            if not self._hand(self.epoch, indices, indices):
                return iter(indices)
        self._handed_fresh = False
        return self._reporting(indices, self._handouts)

    def _reporting(self, indices, handout):
        n = len(indices)
        for position, index in enumerate(indices):
            if position and position % POSITION_EVERY == 0:
                self._report(position, handout)
            yield index
        self._report(n, handout)

    def _report(self, position, handout):
        if self._given_up or handout != self._handouts:
            return  # the schedule is another iteration's now
        try:
            larder.schedule_position(position)
        except Exception as e:
            self._give_up(f"cannot report the position ({type(e).__name__}: {e})")
