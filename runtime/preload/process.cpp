#include "runtime/preload/process.hpp"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "runtime/agent/channel.hpp"
#include "runtime/api/reentry.hpp"
#include "runtime/api/runtime.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"
#include "runtime/mpi_hooks/lifecycle.hpp"
#include "runtime/path/path.hpp"
#include "runtime/preload/fast_path.hpp"
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

void fork_prepare() {
  if (g_process != nullptr) g_process->on_fork_prepare();
}
void fork_parent() {
  if (g_process != nullptr) g_process->on_fork_parent();
}
void fork_child() {
  if (g_process != nullptr) g_process->on_fork_child();
}
void at_exit() {
  ReentryGuard guard;
  if (g_process != nullptr) g_process->on_exit();
}

}  // namespace

Process::Process() = default;

bool Process::under_prefix(std::string_view clean) const noexcept {
  for (const std::string& prefix : config_.prefixes) {
    if (path::is_within(clean, prefix)) return true;
  }
  return false;
}

std::optional<std::string> Process::candidate(const char* path) const {
  if (path == nullptr || *path == '\0') return std::nullopt;
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
  if (any_written_.load(std::memory_order_relaxed)) {
    std::lock_guard lock(written_mu_);
    if (std::find(written_.begin(), written_.end(), abs) != written_.end()) return std::nullopt;
  }
  return abs;
}

std::optional<std::string> Process::candidate_at(int dirfd, const char* path) const {
  if (path == nullptr || *path == '\0') return std::nullopt;
  if (dirfd == AT_FDCWD || path[0] == '/') return candidate(path);
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
  char base[PATH_MAX];
  const ssize_t n = ::readlink(link, base, sizeof base - 1);
  if (n <= 0 || base[0] != '/') return std::nullopt;
  const std::string abs =
      path::absolute_from(std::string_view(base, static_cast<std::size_t>(n)), path);
  return candidate(abs.c_str());
}

void Process::mark_written(const std::string& abs) {
  std::lock_guard lock(written_mu_);
  if (std::find(written_.begin(), written_.end(), abs) == written_.end()) written_.push_back(abs);
  any_written_.store(true, std::memory_order_relaxed);
}

agent::AgentClient* Process::client() noexcept {
  if (auto* c = client_.load(std::memory_order_acquire)) return c;
  if (client_failed_.load(std::memory_order_acquire)) return nullptr;
  try {
    std::lock_guard lock(client_mu_);
    if (auto* c = client_.load(std::memory_order_acquire)) return c;
    const char* name = std::getenv(agent::kEnvName);
    auto connected = agent::AgentClient::connect(name != nullptr ? name : "", config_);
    if (!connected.ok()) {
      LARDER_LOG_INFO("no agent to serve this worker process, reading the file system: {}",
                      connected.status().message());
      client_failed_.store(true, std::memory_order_release);
      return nullptr;
    }
    auto* c = connected->release();  // never deleted: forked children and exit handlers use it
    client_.store(c, std::memory_order_release);
    return c;
  } catch (...) {
    client_failed_.store(true, std::memory_order_release);
    return nullptr;
  }
}

Process::Service Process::service() noexcept {
  if (role_.load(std::memory_order_relaxed) == Role::kClient) {
    Service s;
    s.svc = client();
    return s;
  }
  if (!session_allowed_.load(std::memory_order_relaxed)) return {};
  if (mpi_hooks::wait_until_started(config_.wait_timeout) &&
      !mmap_checked_.load(std::memory_order_relaxed) &&
      !mmap_checked_.exchange(true, std::memory_order_relaxed)) {
    reclaim_mmap_from_ucx();  // a UCX that hooks mmap in MPI_Init, not when it loads
  }
  Service s;
  s.session = Runtime::instance().session();
  s.svc = s.session.get();
  return s;
}

bool Process::detach(int fd) noexcept {
  auto file = files_.find(fd);
  if (file == nullptr || file->directory) return false;
  const int fd_flags = real::fcntl != nullptr ? real::fcntl(fd, F_GETFD) : 0;
  const int cloexec = fd_flags > 0 && (fd_flags & FD_CLOEXEC) != 0 ? O_CLOEXEC : 0;
  const int tmp = sys::open(file->file.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (tmp < 0) return false;
  const bool ok = ::syscall(SYS_dup3, tmp, fd, cloexec) == fd;
  sys::close(tmp);
  if (!ok) return false;
  ::syscall(SYS_lseek, fd, static_cast<off_t>(file->position.load()), SEEK_SET);
  files_.forget(fd);
  return true;
}

bool Process::owns_table() const noexcept {
  return ::getpid() == pid_.load(std::memory_order_relaxed);
}

void Process::on_fork_prepare() noexcept {
  files_.lock_for_fork();
}

void Process::on_fork_parent() noexcept {
  files_.unlock_after_fork();
}

void Process::on_fork_child() noexcept {
  files_.reset_lock_in_child();
  pid_.store(::getpid(), std::memory_order_relaxed);
  mpi_hooks::on_fork_child();
  // The parent's session (and its MPI) is not ours: from now on this process is a worker.
  session_allowed_.store(false, std::memory_order_relaxed);
  if (auto* old = client_.exchange(nullptr, std::memory_order_relaxed)) old->abandon_in_child();
  client_failed_.store(false, std::memory_order_relaxed);
  role_.store(mpi_hooks::is_worker_process() ? Role::kClient : Role::kOff,
              std::memory_order_relaxed);
}

void Process::on_exit() noexcept {
  if (auto* c = client_.load(std::memory_order_acquire)) c->flush_stats();
  mpi_hooks::on_exit();
}

void initialize() noexcept {
  ReentryGuard guard;
  real::resolve_all();
  if (!mpi_hooks::activation_requested()) return;
  try {
    auto config = Config::from_environment();
    if (!config.ok()) {
      LARDER_LOG_ERROR("{}; larder is off for this process", config.status().message());
      return;
    }
    if (!config->enabled || config->prefixes.empty()) return;
    reclaim_mmap_from_ucx();  // UCX's constructor has hooked mmap already (ucx_hooks.hpp)
    auto* p = new Process();  // never deleted
    p->config_ = std::move(*config);
    p->pid_.store(::getpid());
    if (mpi_hooks::is_worker_process()) {
      p->role_.store(Role::kClient);
    } else if (mpi_hooks::launched_by_mpiexec()) {
      p->role_.store(Role::kRank);
      mpi_hooks::start_self_init();
    }
    g_process = p;
    ::pthread_atfork(fork_prepare, fork_parent, fork_child);
    std::atexit(at_exit);
    g_enabled = true;
  } catch (...) {
    LARDER_LOG_ERROR("larder could not start in this process (out of memory)");
  }
}

}  // namespace larder::preload
