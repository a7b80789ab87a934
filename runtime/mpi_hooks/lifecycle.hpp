// Lifecycle: who initialises MPI in this process, when the runtime starts and stops, and the
// node-local agent that serves the rank's worker processes.
//
// Two ways in:
//  - The application calls MPI_Init or MPI_Init_thread (the PMPI hooks in mpi_hooks.cpp): MPI is
//    initialised on the application's thread, asking for MPI_THREAD_MULTIPLE (the runtime's
//    progress thread needs it); the application is told the level MPI provides. The runtime
//    starts right after, and stops in MPI_Finalize before PMPI_Finalize.
//  - Self-initialisation (the preload library, in a process mpiexec launched): a service thread,
//    started when the library loads, initialises MPI and the runtime and keeps them until the
//    process exits (or the application calls MPI_Finalize); MPI_Finalize runs on the thread
//    that called MPI_Init_thread, as the standard asks. An application that calls MPI_Init
//    later is told MPI is ready. Initialising at load, not at the first managed call, keeps
//    MPI_Init (which every rank must reach) independent of what the application does: a rank
//    that never touches a managed file still takes part.
//
// Larder activates only when LARDER_PREFIX is set and LARDER_ENABLE is not false; otherwise the
// hooks are plain pass-throughs to PMPI. A worker process (a child of a rank, found by
// LARDER_AGENT naming another process) never initialises MPI: the hooks refuse with an error.
#ifndef LARDER_RUNTIME_MPI_HOOKS_LIFECYCLE_HPP_
#define LARDER_RUNTIME_MPI_HOOKS_LIFECYCLE_HPP_

#include <chrono>

namespace larder::mpi_hooks {

// LARDER_PREFIX is set and Larder is not disabled.
bool activation_requested() noexcept;
// The environment says mpiexec (MPICH hydra, Open MPI, PMIx) started this process.
bool launched_by_mpiexec() noexcept;
// LARDER_AGENT names another process: this is a worker of a rank.
bool is_worker_process() noexcept;

// The preload library's constructor, in a rank: binds the agent's socket, publishes its name
// in LARDER_AGENT (inherited by children from now on) and starts the service thread.
void start_self_init() noexcept;

// Waits (bounded by `timeout`) until a start under way has finished, successfully or not.
// True when the runtime is running afterwards.
bool wait_until_started(std::chrono::milliseconds timeout) noexcept;

// The hooks' bodies.
int on_init(int* argc, char*** argv, int required, int* provided, bool thread_variant) noexcept;
int on_finalize() noexcept;
// atexit: finalises what Larder initialised itself (in the process that initialised it).
void on_exit() noexcept;
// In a child after fork: forget the parent's MPI and agent (async-signal-safe).
void on_fork_child() noexcept;

}  // namespace larder::mpi_hooks

#endif  // LARDER_RUNTIME_MPI_HOOKS_LIFECYCLE_HPP_
