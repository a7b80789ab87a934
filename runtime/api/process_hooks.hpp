// What the C API (c_api.cpp) asks the preload library about this process.
//
// The C API is in liblarder.so and in liblarder_preload.so; only the preload starts Larder on a
// thread of its own at load (self-initialisation) and serves workers of a rank, so it registers
// the answers when it loads (runtime/preload/api_hooks.cpp). Without them (liblarder.so alone)
// no process is a served worker and there is no start to wait for.
#ifndef LARDER_RUNTIME_API_PROCESS_HOOKS_HPP_
#define LARDER_RUNTIME_API_PROCESS_HOOKS_HPP_

namespace larder::api {

struct ProcessHooks {
  // True when this process is a worker of a rank whose cache serves its reads.
  bool (*serves_worker)() noexcept = nullptr;
  // Waits (bounded by LARDER_TIMEOUT) for a start under way, so that a C API call made while
  // the runtime is starting sees it running; returns at once when no start is under way.
  void (*wait_for_start)() noexcept = nullptr;
};

// Called once, from a static initializer of the preload library.
void set_process_hooks(const ProcessHooks& hooks) noexcept;

}  // namespace larder::api

#endif  // LARDER_RUNTIME_API_PROCESS_HOOKS_HPP_
