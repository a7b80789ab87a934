// The exec family. An image that started MPI cannot exec without cutting MPI's conversation with
// the launcher off (runtime/mpi_hooks/exec_proxy.hpp): there the exec becomes a child served by
// this rank. Every other exec (a launcher wrapper, a rank's child, a process with Larder off)
// goes straight to the real call. execl, execle and execlp are built on these (their arguments
// become an argv array first); posix_spawn starts a new process, which is a worker, and needs
// nothing.
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <string>
#include <vector>

#include "runtime/mpi_hooks/exec_proxy.hpp"
#include "runtime/mpi_hooks/lifecycle.hpp"
#include "runtime/preload/wrap.hpp"

extern char** environ;  // NOLINT: POSIX's global environment

namespace larder::preload {
namespace {

// The exec functions the proxied child calls (real ones, never these wrappers).
int real_execve(const char* file, char* const argv[], char* const envp[]) {
  return call(real::execve, file, argv, envp);
}
int real_execvpe(const char* file, char* const argv[], char* const envp[]) {
  return call(real::execvpe, file, argv, envp);
}

// Hands over when this image started MPI; otherwise returns 0 and the caller execs for real.
int hand_over(int (*exec)(const char*, char* const[], char* const[]), const char* file,
              char* const argv[], char* const envp[]) noexcept {
  real::ensure();
  if (!enabled() || larder::t_reentry_depth != 0 || !mpi_hooks::owns_mpi_start()) return 0;
  ReentryGuard guard;
  return mpi_hooks::exec_or_proxy({exec, file, argv, envp});
}

// execl-style arguments (after `first`, up to the null pointer) as an argv array.
std::vector<char*> collect(const char* first, va_list ap) {
  std::vector<char*> argv{const_cast<char*>(first)};
  if (first == nullptr) return argv;
  for (;;) {
    char* a = va_arg(ap, char*);
    argv.push_back(a);
    if (a == nullptr) break;
  }
  return argv;
}

}  // namespace
}  // namespace larder::preload

using namespace larder::preload;  // NOLINT(google-build-using-namespace): wrapper file

extern "C" {

int execve(const char* path, char* const argv[], char* const envp[]) {
  if (hand_over(real_execve, path, argv, envp) < 0) return -1;
  return call(real::execve, path, argv, envp);
}

int execv(const char* path, char* const argv[]) {
  if (hand_over(real_execve, path, argv, environ) < 0) return -1;
  return call(real::execv, path, argv);
}

int execvp(const char* file, char* const argv[]) {
  if (hand_over(real_execvpe, file, argv, environ) < 0) return -1;
  return call(real::execvp, file, argv);
}

int execvpe(const char* file, char* const argv[], char* const envp[]) {
  if (hand_over(real_execvpe, file, argv, envp) < 0) return -1;
  return call(real::execvpe, file, argv, envp);
}

int fexecve(int fd, char* const argv[], char* const envp[]) {
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (hand_over(real_execve, path.c_str(), argv, envp) < 0) return -1;
  return call(real::fexecve, fd, argv, envp);
}

int execl(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> argv = collect(arg, ap);
  va_end(ap);
  return execve(path, argv.data(), environ);
}

int execlp(const char* file, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> argv = collect(arg, ap);
  va_end(ap);
  return execvpe(file, argv.data(), environ);
}

int execle(const char* path, const char* arg, ...) {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> argv = collect(arg, ap);
  char* const* envp = va_arg(ap, char* const*);
  va_end(ap);
  return execve(path, argv.data(), envp);
}

}  // extern "C"
