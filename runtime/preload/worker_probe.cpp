// Registers the preload library's answer to "is this process a worker its rank serves?" with the
// C API (runtime/api/worker_probe.hpp), for larder_active().
#include "runtime/api/worker_probe.hpp"

#include "runtime/mpi_hooks/lifecycle.hpp"
#include "runtime/preload/process.hpp"

namespace larder::preload {
namespace {

// The preload is on (LARDER_PREFIX, valid settings) and LARDER_AGENT names another process: a
// forked or spawned child of a rank, whose managed reads go to the rank's agent.
bool serves_worker() noexcept {
  return g_enabled && mpi_hooks::is_worker_process();
}

struct RegisterProbe {
  RegisterProbe() noexcept { api::set_worker_probe(&serves_worker); }
};
const RegisterProbe kRegisterProbe;

}  // namespace
}  // namespace larder::preload
