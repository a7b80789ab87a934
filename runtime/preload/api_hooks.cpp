// Registers the preload library's answers about this process with the C API
// (runtime/api/process_hooks.hpp): larder_active() and the calls made while Larder starts.
#include <chrono>

#include "runtime/api/process_hooks.hpp"
#include "runtime/config/config.hpp"
#include "runtime/mpi_hooks/lifecycle.hpp"
#include "runtime/preload/process.hpp"

namespace larder::preload {
namespace {

// The preload is on (LARDER_PREFIX, valid settings) and LARDER_AGENT names another process: a
// forked or spawned child of a rank, whose managed reads go to the rank's agent.
bool serves_worker() noexcept {
  return g_enabled && mpi_hooks::is_worker_process();
}

// A rank's runtime starts on the service thread when the library loads: a C API call made in
// the meantime (Python's `import larder` at the top of a script) waits for it, as the preload's
// own wrappers do.
void wait_for_start() noexcept {
  if (!g_enabled) return;
  try {
    static const std::chrono::milliseconds timeout = [] {
      auto config = Config::from_environment();
      return config.ok() ? config->wait_timeout : std::chrono::milliseconds(60'000);
    }();
    (void)mpi_hooks::wait_until_started(timeout);  // false: no start; the caller sees no session
  } catch (...) {  // std::bad_alloc reading the settings: do not wait
  }
}

struct RegisterHooks {
  RegisterHooks() noexcept { api::set_process_hooks({&serves_worker, &wait_for_start}); }
};
const RegisterHooks kRegisterHooks;

}  // namespace
}  // namespace larder::preload
