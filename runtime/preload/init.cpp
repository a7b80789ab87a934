// The library constructor, which decides this process's role and, in a rank launched by mpiexec,
// starts MPI and the runtime there, before main (runtime/mpi_hooks/lifecycle.hpp); and _exit/
// _Exit, so a rank that leaves without exit() (dash does) still finalises what Larder started.
#include <unistd.h>

#include <cstdlib>

#include "runtime/mpi_hooks/lifecycle.hpp"
#include "runtime/preload/process.hpp"
#include "runtime/preload/real.hpp"

namespace {

__attribute__((constructor)) void larder_preload_init() {
  larder::preload::initialize();
}

[[noreturn]] void leave(void (*real_exit)(int), int status) noexcept {
  if (larder::preload::enabled()) larder::preload::on_exit();
  larder::preload::real::ensure();
  if (real_exit != nullptr) real_exit(status);
  __builtin_trap();
}

}  // namespace

extern "C" {

void _exit(int status) {
  leave(larder::preload::real::_exit, status);
}

void _Exit(int status) noexcept {
  leave(larder::preload::real::_Exit, status);
}

}  // extern "C"
