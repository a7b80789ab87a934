// UCX's memory hooks and the preload library's mmap.
//
// UCX's memory manager (libucm) hooks mmap, munmap, mremap, shmat, shmdt, brk, sbrk and madvise
// so that its registration caches hear about every change to the address space. In UCX 1.13's
// default "bistro" mode it overwrites the first instructions of the first `mmap` in symbol lookup
// order, which is the preload library's, with a jump to its handler, which then calls the
// kernel: an mmap of a managed descriptor (a placeholder) would fail with EBADF.
//
// The same holds for munmap, which the preload wraps too (the end of a writable mapping of a
// produced file can publish it). So Larder takes its mmap and munmap back, once, in the library
// constructor, while the process has one thread (nothing may execute code while it is rewritten):
// it first makes libucm install its hooks through UCX's public API
// (ucx_transport/memory_hooks.hpp), so that no later install (MPI_Init) patches anything, then
// compares the first bytes of the first mmap and mmap64 in lookup order (the preload's, or a tool's
// in front of it, such as ASan's interceptor, which calls the preload's) with the same bytes in the
// library file and, where a jump was written, puts the original bytes back. Every call the preload
// does not serve itself then goes to UCX's public ucm_mmap (the handlers, then the kernel), which
// is what the jump did, so UCX still sees every mapping (libucm's own check of its hooks, at later
// installs, passes through it too); and a mapping Larder makes for a managed file is made through
// it as well. With UCX's memory events off or UCX_MEM_MMAP_HOOK_MODE=none no jump is written and
// nothing is restored.
#ifndef LARDER_RUNTIME_PRELOAD_UCX_HOOKS_HPP_
#define LARDER_RUNTIME_PRELOAD_UCX_HOOKS_HPP_

#include <sys/types.h>

#include <cstddef>

namespace larder::preload {

using MmapFn = void* (*)(void*, std::size_t, int, int, int, off_t);
using MunmapFn = int (*)(void*, std::size_t);

// UCX's ucm_mmap, once Larder has taken its mmap back from UCX's hook; null otherwise.
MmapFn ucm_mmap() noexcept;
// UCX's ucm_munmap, once Larder has taken its munmap back (it wraps munmap to see the end of
// writable mappings of produced files); null otherwise.
MunmapFn ucm_munmap() noexcept;

// The constructor's work (see above). Call only while the process has one thread. Returns how
// many entry points were restored.
int take_mmap_from_ucx() noexcept;

}  // namespace larder::preload

#endif  // LARDER_RUNTIME_PRELOAD_UCX_HOOKS_HPP_
