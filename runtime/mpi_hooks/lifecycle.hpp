// Lifecycle: who initialises MPI in this process, when Larder's session starts and stops, and
// the node-local agent that serves the rank's worker processes. The state lives in the Runtime
// (Runtime::mpi_life()); this file is the behaviour. docs/architecture.md, "Start and stop".
//
// Two ways in:
//  - Self-initialisation (the preload library, in a rank an MPI launcher started): the library
//    constructor initialises MPI (MPI_THREAD_MULTIPLE) and starts the session, on the thread that
//    loads the library, before the program runs (MPI's start and Larder's add environment
//    variables, which no other thread may be reading: lifecycle.cpp). Every rank joins start-up
//    whether or not it ever touches a managed file. An image that is only a launcher wrapper (a
//    shell, env, numactl, a pyenv shim...) never starts anything: the program it runs does
//    (wrapper_kind()).
//  - The application calls MPI_Init/MPI_Init_thread: if Larder already initialised MPI the call
//    returns MPI_SUCCESS with the level MPI provides; otherwise the hook initialises MPI on the
//    application's thread, asking for MPI_THREAD_MULTIPLE, and starts the session.
//
// Stopping always happens on the thread that asks for it, never by waiting for another thread:
// the application's MPI_Finalize (whatever thread calls it), or, when the application never
// finalizes, the exit of the process (atexit, _exit). The session stops first (collective over
// Larder's own communicator), then PMPI_Finalize runs on that same thread. So nothing of Larder
// waits on a lock the application's thread holds (Python's GIL inside MPI.Finalize()).
//
// A worker process (LARDER_AGENT names another process) never initialises MPI: the hooks refuse.
#ifndef LARDER_RUNTIME_MPI_HOOKS_LIFECYCLE_HPP_
#define LARDER_RUNTIME_MPI_HOOKS_LIFECYCLE_HPP_

#include <chrono>
#include <string_view>

namespace larder::mpi_hooks {

// The environment says an MPI launcher started this process: mpiexec (MPICH hydra, Open MPI),
// or srun with a PMI (PMI_RANK/PMI_FD: MPICH and Slurm's pmi2; OMPI_COMM_WORLD_RANK; PMIX_RANK).
bool launched_by_mpiexec() noexcept;
// LARDER_AGENT names another process: this is a worker of a rank.
bool is_worker_process() noexcept;
// Launcher wrappers: programs that run the real program for the rank. An exec wrapper (a shell,
// env, numactl, taskset, a pyenv shim; LARDER_WRAPPERS adds names) replaces itself with it, and
// the processes it starts meanwhile are its helpers. A forking wrapper (a container runtime's
// starter, bwrap; LARDER_FORKING_WRAPPERS adds names) starts it as its child and waits for it.
// Neither starts Larder itself. `name` is a program's basename (of /proc/<pid>/exe).
enum class Wrapper : int { kNone, kExec, kFork };
Wrapper wrapper_kind(std::string_view name) noexcept;

// The preload library's constructor, in a rank: sets Open MPI's defaults, binds the agent's
// socket, names it in LARDER_AGENT (inherited by children from now on), initialises MPI and
// starts the session. Only while the process has one thread: the environment changes here.
void start_self_init() noexcept;

// Waits (bounded by `timeout`) until a start under way has finished, successfully or not.
// True when the session is running afterwards.
bool wait_until_started(std::chrono::milliseconds timeout) noexcept;

// True when this image started MPI (or is starting it): an exec from it must hand over
// (exec_proxy.hpp) instead of cutting MPI off.
bool owns_mpi_start() noexcept;

// The hooks' bodies.
int on_init(int* argc, char*** argv, int required, int* provided, bool thread_variant) noexcept;
int on_finalize() noexcept;
// atexit and _exit: stops what Larder started (in the process that started it).
void on_exit() noexcept;

// Sets the Open MPI defaults Larder needs (osc ucx) unless the user chose: before MPI starts.
void set_openmpi_defaults() noexcept;

}  // namespace larder::mpi_hooks

#endif  // LARDER_RUNTIME_MPI_HOOKS_LIFECYCLE_HPP_
