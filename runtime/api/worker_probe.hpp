// Whether the preload library serves this process as a worker of a rank (larder_active()).
//
// The C API (c_api.cpp) is in liblarder.so and in liblarder_preload.so; only the preload has
// workers, so it registers the probe when it loads (runtime/preload/worker_probe.cpp). Without a
// probe (liblarder.so alone) no process is a served worker.
#ifndef LARDER_RUNTIME_API_WORKER_PROBE_HPP_
#define LARDER_RUNTIME_API_WORKER_PROBE_HPP_

namespace larder::api {

using WorkerProbe = bool (*)() noexcept;

// Called once, from a static initializer of the preload library.
void set_worker_probe(WorkerProbe probe) noexcept;

}  // namespace larder::api

#endif  // LARDER_RUNTIME_API_WORKER_PROBE_HPP_
