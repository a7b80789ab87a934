// UCX's memory hooks (libucm), installed when Larder chooses rather than inside MPI_Init.
//
// UCX's registration caches need to hear about every change to the address space, so libucm
// hooks mmap, munmap, mremap, shmat, shmdt, brk, sbrk and madvise the first time a handler for
// those events is set: in UCX 1.13 that is MPI_Init (ucp's registration cache), when the
// application's threads may already run. The preload library must undo the hook UCX writes over
// its own mmap (runtime/preload/ucx_hooks.hpp), and code must not be rewritten while other
// threads may execute it; so the library constructor, while the process has one thread, makes
// libucm install its hooks now through UCX's public API (a handler for the same events, removed
// again at once). Later installs find them in place and patch nothing more.
#ifndef LARDER_UCX_TRANSPORT_MEMORY_HOOKS_HPP_
#define LARDER_UCX_TRANSPORT_MEMORY_HOOKS_HPP_

namespace larder::ucx {

// Makes libucm install its mmap-family hooks now. False when UCX installs none (its memory
// events are off, UCX_MEM_MMAP_HOOK_MODE=none, or the install failed): then nothing is patched.
bool install_memory_hooks_now() noexcept;

}  // namespace larder::ucx

#endif  // LARDER_UCX_TRANSPORT_MEMORY_HOOKS_HPP_
