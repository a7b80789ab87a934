// UCX's memory hooks and the preload library's mmap.
//
// UCX's memory manager (libucm) hooks mmap, munmap, mremap, shmat, shmdt, brk, sbrk and madvise
// so that its registration caches hear about every change to the address space. UCX 1.13's
// default "bistro" mode does it in libucs's constructor, before the preload library's own
// constructor runs: it overwrites the first instructions of the first `mmap` in symbol lookup
// order, which is the preload library's, with a jump to its handler, which then calls the
// kernel. From then on an mmap of a managed descriptor (a placeholder) fails with EBADF.
// Setting UCM's hook mode to "none" at that point is too late (the hooks are in, and UCM then
// calls them recursively), and its settings are read before any Larder code runs.
//
// So Larder takes its mmap back instead: the library constructor, and again the runtime once MPI
// (and with it UCX) is initialised, compares the first bytes of the first mmap and mmap64 in
// lookup order (the preload's, or a tool's in front of it, such as ASan's interceptor, which
// calls the preload's) with the same bytes in its library file and, when a jump has been written
// there, puts the original bytes back. Every call the preload does not serve itself then goes to
// UCX's public ucm_mmap (the handlers, then the kernel), which is what the jump did, so UCX still
// sees every mapping; and a mapping Larder fills from the cache is made through it too. The user's
// UCX_MEM_MMAP_HOOK_MODE=none needs nothing: no jump is written.
#ifndef LARDER_RUNTIME_PRELOAD_UCX_HOOKS_HPP_
#define LARDER_RUNTIME_PRELOAD_UCX_HOOKS_HPP_

#include <sys/types.h>

#include <atomic>
#include <cstddef>

namespace larder::preload {

using MmapFn = void* (*)(void*, std::size_t, int, int, int, off_t);

// UCX's ucm_mmap, once Larder has taken its mmap back from UCX's hook; null otherwise.
inline std::atomic<MmapFn> g_ucm_mmap{nullptr};  // release/acquire: set once the code is restored

// Takes mmap and mmap64 back from a hook written over their first definitions (see above).
// Idempotent; returns how many entry points were restored.
int reclaim_mmap_from_ucx() noexcept;

}  // namespace larder::preload

#endif  // LARDER_RUNTIME_PRELOAD_UCX_HOOKS_HPP_
