// ExecProxy: an exec from the image that started MPI (docs/architecture.md, "Wrappers and exec").
//
// MPI's conversation with the launcher (PMI_FD, PMIx) belongs to the image that started it and
// cannot survive exec: the next image would read replies meant for the old one, and the other
// ranks would wait for a rank that is gone. So when such an image execs, it stays: it runs the
// new program as its child, with the same arguments, environment and descriptors plus
// LARDER_AGENT, which makes the child a worker served by this rank; it forwards the usual job
// control and termination signals to the child, waits for it, stops Larder and MPI, and leaves
// with the child's exit status (or dies of the child's signal) without running the old image's
// exit handlers, as exec would not have. What differs from a real exec: the program's pid, other
// threads of the old image keep running, and the new program cannot initialise MPI (a worker).
//
// Images that never started MPI (launcher wrappers, children of a rank) exec as usual.
#ifndef LARDER_RUNTIME_MPI_HOOKS_EXEC_PROXY_HPP_
#define LARDER_RUNTIME_MPI_HOOKS_EXEC_PROXY_HPP_

namespace larder::mpi_hooks {

// How the child starts the new program: a real exec function (never Larder's wrapper), called in
// a vfork()ed child with the environment to use. Returns only on failure (errno set).
struct ExecCall {
  int (*exec)(const char* file, char* const argv[], char* const envp[]) = nullptr;
  const char* file = nullptr;  // a path, or a name searched in PATH (execvp) by `exec`
  char* const* argv = nullptr;
  char* const* envp = nullptr;
};

// Called by the exec wrappers before the real exec. Returns normally when this image may exec
// (it never started MPI, or MPI's start failed or is over); otherwise runs `call` as a proxied
// child and never returns, except when the child cannot be started at all: then -1 with errno,
// as the exec would have failed.
int exec_or_proxy(const ExecCall& call) noexcept;

}  // namespace larder::mpi_hooks

#endif  // LARDER_RUNTIME_MPI_HOOKS_EXEC_PROXY_HPP_
