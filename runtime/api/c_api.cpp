// larder.h: the C API. Every entry point is a noexcept boundary (docs/style.md, rule 10).
#include <larder/larder.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mpi_transport/mpi_job.hpp"
#include "runtime/agent/agent_server.hpp"
#include "runtime/api/file_ops.hpp"
#include "runtime/api/produce_ops.hpp"
#include "runtime/api/runtime.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"

namespace {

using larder::Errc;
using larder::Runtime;
using larder::Session;
using larder::Status;

thread_local std::string t_last_error;

// A forked child inherits its parent's session object, but not its threads, its MPI or its place
// in the job: every call here treats it as no session (the preload library serves such a child
// through its rank's agent instead, and its Runtime drops the session too). Set in the child by
// the fork handler, so that a program linked with liblarder.so alone is covered as well;
// inherited by its own children.
std::atomic<bool> g_session_is_parents{false};

void fork_child() noexcept {
  if (Runtime::instance().active()) g_session_is_parents.store(true, std::memory_order_relaxed);
}

struct ForkHandler {
  ForkHandler() noexcept {
    if (const int err = pthread_atfork(nullptr, nullptr, &fork_child); err != 0) {
      LARDER_LOG_WARN("pthread_atfork failed ({}): a forked child may use its parent's session",
                      std::strerror(err));
    }
  }
};
const ForkHandler fork_handler;  // registers the handler when the library loads

// In a rank whose Larder is still starting (the preload library starts it in its constructor; a
// thread MPI's start created may call in before it has finished), waits for the start to end,
// bounded by LARDER_TIMEOUT, as the preload's own wrappers do: `import larder` at the top of a
// script must see the running cache.
void wait_for_start() noexcept {
  Runtime& rt = Runtime::instance();
  if (rt.role() != larder::Role::kRank) return;
  larder::MpiLife& life = rt.mpi_life();
  if (life.phase.load(std::memory_order_acquire) != larder::Phase::kStarting) return;
  try {
    std::unique_lock lock(life.mu);
    life.changed.wait_for(lock, rt.config().wait_timeout,
                          [&] { return life.phase.load() != larder::Phase::kStarting; });
  } catch (...) {  // std::system_error from the mutex: do not wait
  }
}

// A lease on the session running in this process, or an empty one.
larder::Lease own_session() noexcept {
  if (g_session_is_parents.load(std::memory_order_relaxed)) return {};
  if (larder::Lease s = Runtime::instance().session()) return s;
  wait_for_start();
  return Runtime::instance().session();
}

Status not_running() {
  return {Errc::kUnavailable, 0,
          g_session_is_parents.load(std::memory_order_relaxed)
              ? "larder is not initialized in this process (a forked child: its parent's "
                "session is not usable here)"
              : "larder is not initialized"};
}

// Copies `text` into `buf` as the stats calls promise (larder.h).
void copy_out(const std::string& text, char* buf, size_t size, size_t* needed_p) noexcept {
  if (buf != nullptr && size > 0) {
    const size_t n = std::min(size - 1, text.size());
    std::memcpy(buf, text.data(), n);
    buf[n] = '\0';
  }
  if (needed_p != nullptr) *needed_p = text.size() + 1;
}

// This rank's counters so far, with those of its DataLoader workers still in their slots (a
// worker's join the rank's when the agent sees its connection end, some time after it exits).
larder::StatsSnapshot rank_snapshot(Session& s) {
  if (larder::agent::AgentServer* agent = Runtime::instance().agent()) {
    return agent->stats_with_workers(s.stats());
  }
  return s.stats().snapshot();
}

// Collective over the session's communicator: every rank's counters summed (the latency maximum
// is the largest of the ranks'); the same on every rank.
larder::Result<larder::StatsSnapshot> job_snapshot(Session& s) {
  const larder::StatsSnapshot mine = rank_snapshot(s);
  larder::MpiJob* job = s.mpi_job();
  if (job == nullptr) return mine;
  const larder::Topology& topo = s.topology();
  std::vector<std::uint64_t> v;
  v.insert(v.end(), mine.counters.begin(), mine.counters.end());
  v.insert(v.end(), mine.latency.begin(), mine.latency.end());
  v.push_back(mine.latency_sum_ns);
  const std::size_t maxima = v.size();  // then one slot per rank for its latency maximum
  v.resize(maxima + static_cast<std::size_t>(topo.size), 0);
  v[maxima + static_cast<std::size_t>(topo.rank)] = mine.latency_max_ns;
  if (Status st = job->sum(v); !st.ok()) return st;
  larder::StatsSnapshot total;
  std::size_t i = 0;
  for (auto& c : total.counters) c = v[i++];
  for (auto& b : total.latency) b = v[i++];
  total.latency_sum_ns = v[i++];
  total.latency_max_ns =
      *std::max_element(v.begin() + static_cast<std::ptrdiff_t>(maxima), v.end());
  total.ranks = topo.size;
  return total;
}

larder_status_t to_c_status(const Status& s) noexcept {
  switch (s.code()) {
    case Errc::kOk:
      return LARDER_OK;
    case Errc::kInvalidArgument:
      return s.native_code() == EALREADY ? LARDER_ERR_ALREADY_INITIALIZED
                                         : LARDER_ERR_INVALID_ARGUMENT;
    case Errc::kNotFound:
    case Errc::kIoError:
      return LARDER_ERR_IO;
    case Errc::kNoSpace:
      return LARDER_ERR_NO_SPACE;
    case Errc::kTimeout:
      return LARDER_ERR_TIMEOUT;
    case Errc::kTransport:
      return LARDER_ERR_TRANSPORT;
    case Errc::kMpi:
      return LARDER_ERR_MPI;
    case Errc::kUnavailable:
      return LARDER_ERR_NOT_INITIALIZED;
    case Errc::kHdf5:
    case Errc::kInternal:
      return LARDER_ERR_INTERNAL;
  }
  return LARDER_ERR_INTERNAL;
}

template <class Fn>
larder_status_t status_boundary(Fn&& fn) noexcept {
  try {
    const Status s = fn();
    if (!s.ok()) t_last_error = s.message();
    return to_c_status(s);
  } catch (const std::bad_alloc&) {
    return LARDER_ERR_NO_MEMORY;
  } catch (...) {
    return LARDER_ERR_INTERNAL;
  }
}

// POSIX-style boundary: `fn` returns the result or -1 with errno set; exceptions become ENOMEM/EIO.
template <class T, class Fn>
T posix_boundary(Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    errno = ENOMEM;
  } catch (...) {
    errno = EIO;
  }
  return static_cast<T>(-1);
}

}  // namespace

extern "C" {

larder_status_t larder_init(MPI_Comm comm) {
  return status_boundary([&] {
    if (g_session_is_parents.load(std::memory_order_relaxed)) {
      return Status(Errc::kInvalidArgument, EALREADY,
                    "this process was forked from one that runs larder: it cannot start its own");
    }
    return Runtime::instance().init(comm);
  });
}

larder_status_t larder_finalize(void) {
  return status_boundary([] {
    if (g_session_is_parents.load(std::memory_order_relaxed)) return not_running();
    return Runtime::instance().finalize();
  });
}

int larder_initialized(void) {
  if (g_session_is_parents.load(std::memory_order_relaxed)) return 0;
  wait_for_start();
  return Runtime::instance().active() ? 1 : 0;
}

int larder_active(void) {
  if (larder_initialized() != 0) return LARDER_ACTIVE_RANK;
  // Only the preload library makes a process a worker (a child of a rank, served by its agent).
  const Runtime& rt = Runtime::instance();
  return rt.role() == larder::Role::kWorker && rt.intercepting() ? LARDER_ACTIVE_WORKER
                                                                 : LARDER_ACTIVE_OFF;
}

const char* larder_last_error(void) {
  return t_last_error.c_str();
}

int larder_open(const char* path, int flags, ...) {
  mode_t mode = 0;
  if ((flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return posix_boundary<int>([&]() -> int {
    if (auto s = own_session()) {
      // Under LARDER_PRODUCE a write produces the file: write(2) to the descriptor, then
      // larder_close publishes it.
      auto abs = larder::ops::candidate(s->config(), path, true);
      if (abs && s->config().produced(*abs)) {
        auto& table = larder::Runtime::instance().produced();
        if (auto fd = larder::produce::open(*s, table, *abs, flags, mode)) return *fd;
      }
      if (auto fd = larder::ops::try_open(*s, path, flags, true)) return *fd;
    }
    return larder::sys::open(path, flags, mode);
  });
}

int larder_close(int fd) {
  return posix_boundary<int>([&]() -> int {
    auto& table = larder::Runtime::instance().produced();
    if (table.maybe_produced(fd)) {
      auto s = own_session();
      return larder::produce::close(s ? s.get() : nullptr, table, fd);
    }
    if (auto s = own_session()) {
      if (auto rc = larder::ops::try_close(s->files(), fd)) return *rc;
    }
    return larder::sys::close(fd);
  });
}

ssize_t larder_pread(int fd, void* buf, size_t count, off_t offset) {
  return posix_boundary<ssize_t>([&]() -> ssize_t {
    if (auto s = own_session()) {
      if (auto n = larder::ops::try_pread(*s, s->files(), fd, buf, count, offset)) return *n;
    }
    return larder::sys::pread(fd, buf, count, offset);
  });
}

ssize_t larder_read(int fd, void* buf, size_t count) {
  return posix_boundary<ssize_t>([&]() -> ssize_t {
    if (auto s = own_session()) {
      if (auto n = larder::ops::try_read(*s, s->files(), fd, buf, count)) return *n;
    }
    return larder::sys::read(fd, buf, count);
  });
}

off_t larder_lseek(int fd, off_t offset, int whence) {
  return posix_boundary<off_t>([&]() -> off_t {
    if (auto s = own_session()) {
      if (auto pos = larder::ops::try_lseek(s->files(), fd, offset, whence)) return *pos;
    }
    return ::lseek(fd, offset, whence);
  });
}

int larder_fstat(int fd, struct stat* st) {
  return posix_boundary<int>([&]() -> int {
    if (auto s = own_session()) {
      if (auto rc = larder::ops::try_fstat(s->files(), fd, st)) return *rc;
    }
    return larder::sys::fstat(fd, st);
  });
}

int larder_stat(const char* path, struct stat* st) {
  return posix_boundary<int>([&]() -> int {
    if (auto s = own_session()) {
      if (auto rc = larder::ops::try_stat(*s, path, st, true)) return *rc;
    }
    return larder::sys::stat(path, st);
  });
}

int larder_is_managed(const char* path) {
  try {
    auto s = own_session();
    if (!s) return 0;
    auto abs = larder::ops::candidate(s->config(), path, true);
    if (!abs) return 0;
    auto record = s->lookup(*abs);
    return record.ok() && record->error == 0 && record->managed() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

larder_status_t larder_stage(const char* const* paths, size_t npaths,
                             larder_stage_result_t* result_p) {
  return status_boundary([&]() -> Status {
    auto s = own_session();
    if (!s) return not_running();
    if (paths == nullptr && npaths > 0) return larder::invalid_argument("paths is null");
    std::vector<std::string> roots;
    roots.reserve(npaths);
    for (size_t i = 0; i < npaths; ++i) {
      // Resolved like larder_open's paths; one that cannot be (null, empty, outside
      // LARDER_PREFIX) stays in the list, so that every rank walks the same roots, and is
      // counted as skipped.
      auto abs = larder::ops::candidate(s->config(), paths[i], true);
      roots.push_back(abs ? *abs : std::string());
    }
    auto totals = s->stage(roots);
    if (!totals.ok()) return totals.status();
    if (result_p != nullptr) {
      *result_p = larder_stage_result_t{totals->files, totals->bytes, totals->chunks,
                                        totals->not_cached, totals->skipped};
    }
    return {};
  });
}

larder_status_t larder_schedule(const larder_read_t* reads, size_t nreads, unsigned flags) {
  return status_boundary([&]() -> Status {
    auto s = own_session();
    if (!s) return not_running();
    if (reads == nullptr && nreads > 0) return larder::invalid_argument("reads is null");
    if ((flags & ~LARDER_SCHEDULE_APPEND) != 0) {
      return larder::invalid_argument("flags: 0 or LARDER_SCHEDULE_APPEND");
    }
    std::vector<larder::Cache::ScheduledRead> plan;
    plan.reserve(nreads);
    for (size_t i = 0; i < nreads; ++i) {
      // An entry that cannot be resolved stays, empty, so that positions count it.
      auto abs = reads[i].path != nullptr ? larder::ops::candidate(s->config(), reads[i].path, true)
                                          : std::nullopt;
      plan.push_back({abs ? std::move(*abs) : std::string(), reads[i].offset, reads[i].length});
    }
    s->cache().schedule(std::move(plan), (flags & LARDER_SCHEDULE_APPEND) != 0);
    return {};
  });
}

larder_status_t larder_schedule_position(uint64_t position) {
  return status_boundary([&]() -> Status {
    auto s = own_session();
    if (!s) return not_running();
    s->cache().schedule_position(position);
    return {};
  });
}

larder_status_t larder_job(int* rank_p, int* size_p) {
  return status_boundary([&]() -> Status {
    auto s = own_session();
    if (!s) return not_running();
    if (rank_p != nullptr) *rank_p = s->topology().rank;
    if (size_p != nullptr) *size_p = s->topology().size;
    return {};
  });
}

larder_status_t larder_stats_get(larder_stats_t* stats_p) {
  return status_boundary([&]() -> Status {
    auto s = own_session();
    if (!s) return not_running();
    if (stats_p == nullptr) return larder::invalid_argument("stats_p is null");
    using larder::Counter;
    const larder::StatsSnapshot snap = rank_snapshot(*s);
    larder_stats_t out{};
    out.pfs_bytes_read = snap.get(Counter::pfs_bytes_read);
    out.pfs_read_ops = snap.get(Counter::pfs_read_ops);
    out.pfs_stat_ops = snap.get(Counter::pfs_stat_ops);
    out.pfs_list_ops = snap.get(Counter::pfs_list_ops);
    out.hits_self = snap.get(Counter::hits_self);
    out.hits_node = snap.get(Counter::hits_node);
    out.hits_remote = snap.get(Counter::hits_remote);
    out.misses = snap.get(Counter::misses);
    out.fallbacks = snap.get(Counter::fallbacks);
    out.transport_bytes = snap.get(Counter::transport_bytes);
    *stats_p = out;
    return {};
  });
}

larder_status_t larder_stats_json(char* buf, size_t size, size_t* needed_p) {
  return status_boundary([&]() -> Status {
    auto s = own_session();
    if (!s) return not_running();
    copy_out(rank_snapshot(*s).to_json(), buf, size, needed_p);
    return {};
  });
}

larder_status_t larder_job_stats_json(char* buf, size_t size, size_t* needed_p) {
  return status_boundary([&]() -> Status {
    auto s = own_session();
    if (!s) return not_running();
    auto total = job_snapshot(*s);
    if (!total.ok()) return total.status();
    copy_out(total->to_json(), buf, size, needed_p);
    return {};
  });
}

larder_status_t larder_summary_line(int job, char* buf, size_t size, size_t* needed_p) {
  return status_boundary([&]() -> Status {
    auto s = own_session();
    if (!s) return not_running();
    if (job == 0) {
      copy_out(rank_snapshot(*s).summary_line(), buf, size, needed_p);
      return {};
    }
    auto total = job_snapshot(*s);
    if (!total.ok()) return total.status();
    copy_out(total->summary_line(), buf, size, needed_p);
    return {};
  });
}

}  // extern "C"
