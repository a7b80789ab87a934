#include "runtime/preload/process.hpp"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "runtime/agent/agent_client.hpp"
#include "runtime/api/produce_ops.hpp"
#include "runtime/api/reentry.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"
#include "runtime/mpi_hooks/lifecycle.hpp"
#include "runtime/path/path.hpp"
#include "runtime/preload/real.hpp"
#include "runtime/preload/ucx_hooks.hpp"

namespace larder::preload {
namespace {

// True for an absolute path that lexically_normal() would leave unchanged.
bool is_clean_absolute(std::string_view p) noexcept {
  if (p.empty() || p.front() != '/') return false;
  if (p.size() == 1) return true;
  if (p.back() == '/') return false;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] != '/') continue;
    // p[i] is a separator: the component after it must not be empty, "." or "..".
    const std::string_view rest = p.substr(i + 1);
    if (rest.empty() || rest.front() == '/') return false;
    if (rest == "." || rest.starts_with("./")) return false;
    if (rest == ".." || rest.starts_with("../")) return false;
  }
  return true;
}

bool under_prefix(std::string_view clean) noexcept {
  for (const std::string& prefix : runtime().config().prefixes) {
    if (path::is_within(clean, prefix)) return true;
  }
  return false;
}

void fork_prepare() {
  files().lock_for_fork();
  runtime().produced().lock_for_fork();
}
void fork_parent() {
  runtime().produced().unlock_after_fork();
  files().unlock_after_fork();
}
void fork_child() {
  Runtime& rt = runtime();
  rt.on_fork_child();
  // The parent's session (and its MPI) is not ours: from now on this process is a worker (when
  // the parent serves workers) or passes everything through.
  rt.set_role(mpi_hooks::is_worker_process() ? Role::kWorker : Role::kOff);
}
void at_exit() {
  ReentryGuard guard;
  on_exit();
}

// A process that asked for Larder (LARDER_PREFIX) but was not started by an MPI launcher runs
// without the cache unless it calls MPI_Init: say so once for the whole process tree (children
// inherit the marker), with what to do.
void tell_not_launched() {
  constexpr const char* kMarker = "LARDER_NOTICE_GIVEN";
  if (std::getenv(kMarker) != nullptr) return;
  LARDER_LOG_WARN(
      "not started by an MPI launcher (no PMI_RANK, PMI_FD, OMPI_COMM_WORLD_RANK or PMIX_RANK): "
      "this process and its children read without the cache unless the program calls MPI_Init. "
      "Launch one rank per node with mpiexec or srun (e.g. mpiexec -n NODES -ppn 1 torchrun "
      "...; srun --ntasks-per-node=1 --mpi=pmi2 torchrun ...): the processes it starts are "
      "served through it (docs/user-guide.md, \"torchrun\")");
  ::setenv(kMarker, "1", 1);  // the constructor: the process has one thread
}

// A process under an MPI launcher that is not the rank's program (a wrapper script ran it without
// exec) makes a managed call: say once why it reads without the cache.
void tell_not_rank_once() {
  if (!mpi_hooks::launched_by_mpiexec() || runtime().mpi_life().phase.load() != Phase::kIdle) {
    return;
  }
  static std::atomic<bool> told{false};  // NOLINT: a once-flag for one message
  if (told.exchange(true, std::memory_order_relaxed)) return;
  LARDER_LOG_WARN(
      "process {} reads without the cache: a launcher wrapper (pid {}) started it without exec, "
      "so it is not the rank's program; Larder runs in the program a wrapper execs (end the "
      "wrapper with exec \"$@\") and serves the processes that program starts",
      ::getpid(), ::getppid());
}

}  // namespace

int managed_fd_alias(const char* abs) noexcept {
  if (abs[0] != '/' || (abs[1] != 'p' && abs[1] != 'd')) return -1;  // most paths, at once
  if (!enabled() || files().size_hint() == 0) return -1;
  const char* rest = nullptr;
  if (std::strncmp(abs, "/dev/fd/", 8) == 0) {
    rest = abs + 8;
  } else if (std::strncmp(abs, "/proc/self/fd/", 14) == 0) {
    rest = abs + 14;
  } else if (std::strncmp(abs, "/proc/", 6) == 0) {
    char own[32];
    const int n = std::snprintf(own, sizeof own, "/proc/%d/fd/", static_cast<int>(::getpid()));
    if (n <= 0 || std::strncmp(abs, own, static_cast<std::size_t>(n)) != 0) return -1;
    rest = abs + n;
  } else {
    return -1;
  }
  int fd = 0;
  for (; *rest >= '0' && *rest <= '9'; ++rest) {
    fd = fd * 10 + (*rest - '0');
    if (fd >= FileTable::kMaxTracked) return -1;
  }
  if (*rest != '\0' || !files().maybe_managed(fd)) return -1;
  return fd;
}

std::optional<std::string> candidate(const char* path) {
  if (path == nullptr || *path == '\0') return std::nullopt;
  if (const int fd = path[0] == '/' ? managed_fd_alias(path) : -1; fd >= 0) {
    // The managed file itself: opening or stat'ing its alias must not reach the placeholder.
    if (auto file = files().find(fd); file && !file->directory) return file->file.path;
    return std::nullopt;
  }
  if (path[0] == '/' && surely_outside(path)) return std::nullopt;  // the common case, cheaply
  const std::string_view p(path);
  std::string abs;
  if (is_clean_absolute(p)) {
    if (!under_prefix(p)) return std::nullopt;  // the common case: no allocation
    abs.assign(p);
  } else {
    abs = path::absolute(p);
    if (abs.empty() || !under_prefix(abs)) return std::nullopt;
  }
  // A path this process wrote goes to the file system; files it produces stay Larder's.
  if (runtime().written(abs) && !runtime().config().produced(abs)) return std::nullopt;
  return abs;
}

std::optional<std::string> absolute_at(int dirfd, const char* path) {
  if (path == nullptr || *path == '\0') return std::nullopt;
  if (dirfd == AT_FDCWD || path[0] == '/') {
    std::string abs = path::absolute(path);
    if (abs.empty()) return std::nullopt;
    return abs;
  }
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
  char base[PATH_MAX];
  const ssize_t n = ::readlink(link, base, sizeof base - 1);
  if (n <= 0 || base[0] != '/') return std::nullopt;
  return path::absolute_from(std::string_view(base, static_cast<std::size_t>(n)), path);
}

std::optional<std::string> candidate_at(int dirfd, const char* path) {
  if (path == nullptr || *path == '\0') return std::nullopt;
  if (dirfd == AT_FDCWD || path[0] == '/') return candidate(path);
  auto abs = absolute_at(dirfd, path);
  if (!abs) return std::nullopt;
  return candidate(abs->c_str());
}

Service service() noexcept {
  Runtime& rt = runtime();
  Service s;
  switch (rt.role()) {
    case Role::kWorker:
      s.svc = rt.worker_client();
      return s;
    case Role::kOff:
      if (!rt.active()) {  // nothing started here (a program's own MPI_Init may later)
        tell_not_rank_once();
        return s;
      }
      break;
    case Role::kRank:
      (void)mpi_hooks::wait_until_started(rt.config().wait_timeout);
      break;
  }
  s.lease = rt.session();
  s.svc = s.lease.get();
  return s;
}

bool detach(int fd) noexcept {
  auto file = files().find(fd);
  if (file == nullptr || file->directory) return false;
  const int fd_flags = real::fcntl != nullptr ? real::fcntl(fd, F_GETFD) : 0;
  const int cloexec = fd_flags > 0 && (fd_flags & FD_CLOEXEC) != 0 ? O_CLOEXEC : 0;
  const int tmp = sys::open(file->file.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (tmp < 0) return false;
  const bool ok = ::syscall(SYS_dup3, tmp, fd, cloexec) == fd;
  sys::close(tmp);
  if (!ok) return false;
  ::syscall(SYS_lseek, fd, static_cast<off_t>(file->position.load()), SEEK_SET);
  files().forget(fd);
  return true;
}

bool owns_table() noexcept {
  return ::getpid() == runtime().pid();
}

void on_exit() noexcept {
  Runtime& rt = runtime();
  // Files this process produced and never closed: published while the job can read them.
  if (rt.role() != Role::kOff || rt.active()) {
    try {
      Service svc = service();
      produce::publish_unfinished(svc.svc, rt.produced());
    } catch (...) {
    }
  }
  if (rt.role() == Role::kWorker) {
    if (auto* c = rt.worker_client()) c->flush_stats();
    return;
  }
  mpi_hooks::on_exit();
}

// The basename of the program of process `pid` ("self" for this one), or "" when it cannot be
// read.
std::string program_name(const std::string& pid) {
  char exe[PATH_MAX];
  const std::string link = "/proc/" + pid + "/exe";
  const ssize_t n = ::readlink(link.c_str(), exe, sizeof exe - 1);
  if (n <= 0) return {};
  const std::string_view full(exe, static_cast<std::size_t>(n));
  const std::size_t slash = full.rfind('/');
  return std::string(slash == std::string_view::npos ? full : full.substr(slash + 1));
}

// A process under an MPI launcher is the rank's program unless a launcher wrapper (a shell, env,
// numactl...) started it: the launcher's daemon starts the rank, and a wrapper execs the real
// program in its place (same pid, same parent); a child that a wrapper starts (its helper
// commands, or the program itself when the wrapper does not exec) is not the rank. The parent's
// environment cannot carry this: shells rebuild the environment they pass on from their own
// variables, ignoring what a library constructor set.
bool rank_image() {
  return mpi_hooks::wrapper_kind(program_name(std::to_string(::getppid()))) !=
         mpi_hooks::Wrapper::kExec;
}

void initialize() noexcept {
  ReentryGuard guard;
  real::resolve_all();
  Runtime& rt = runtime();  // parses the configuration, once
  if (!rt.config_status().ok() && std::getenv("LARDER_PREFIX") != nullptr) {
    LARDER_LOG_ERROR("{}; larder is off for this process", rt.config_status().message());
    return;
  }
  if (!rt.requested()) return;
  try {
    if (mpi_hooks::is_worker_process()) {
      rt.set_role(Role::kWorker);
    } else if (mpi_hooks::launched_by_mpiexec() && !rank_image()) {
      // A process a launcher wrapper started without exec (its own helper commands, or the
      // program itself): not the rank. It passes through, and may still call MPI_Init itself.
      take_mmap_from_ucx();  // while the process has one thread (ucx_hooks.hpp)
      rt.set_role(Role::kOff);
    } else {
      const std::string program = program_name("self");
      if (mpi_hooks::wrapper_kind(program) != mpi_hooks::Wrapper::kNone) {
        // A launcher wrapper (a shell, env, numactl, a pyenv shim...) at the rank's pid: the
        // program it execs starts Larder. Nothing here, so the exec cuts nothing off.
        LARDER_LOG_DEBUG("{} is a launcher wrapper: larder starts in the program it execs",
                         program);
        return;
      }
      take_mmap_from_ucx();  // while the process has one thread (ucx_hooks.hpp)
      if (mpi_hooks::launched_by_mpiexec()) {
        rt.set_role(Role::kRank);
        mpi_hooks::start_self_init();
      } else {
        tell_not_launched();
      }
    }
    ::pthread_atfork(fork_prepare, fork_parent, fork_child);
    std::atexit(at_exit);
    rt.set_intercepting(true);
  } catch (...) {
    LARDER_LOG_ERROR("larder could not start in this process (out of memory)");
  }
}

}  // namespace larder::preload
