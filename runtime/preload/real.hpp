// real::name: the next definition of every interposed symbol (libc's), from real_symbols.def.
// Resolved once with dlsym(RTLD_NEXT); a symbol that cannot be resolved stays null, and its
// wrapper then fails the call with ENOSYS (Larder never exits the process).
#ifndef LARDER_RUNTIME_PRELOAD_REAL_HPP_
#define LARDER_RUNTIME_PRELOAD_REAL_HPP_

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstdio>

namespace larder::preload::real {

// NOLINTNEXTLINE(bugprone-macro-parentheses): X-macro; arguments are a type, name, (params)
#define LARDER_REAL(ret, name, params) extern ret(*name) params;
#include "runtime/preload/real_symbols.def"
#undef LARDER_REAL

// Resolves every symbol (idempotent, thread-safe). True when all were found.
bool resolve_all() noexcept;
inline std::atomic<bool> g_resolved{false};  // release/acquire: pointers are set before
inline void ensure() noexcept {
  if (!g_resolved.load(std::memory_order_acquire)) resolve_all();
}

}  // namespace larder::preload::real

#endif  // LARDER_RUNTIME_PRELOAD_REAL_HPP_
