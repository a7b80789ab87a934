#include "runtime/transport/progress_thread.hpp"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"

namespace larder {
namespace {

std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr std::int64_t kActivityWindowNs = 50'000'000;  // eager polling lasts 50 ms after activity

// When every source wakes the thread through its descriptor, the timeout is only a safety net
// against an event that never comes: this long (or the idle interval, if longer), never a hang.
constexpr auto kEventSafetyNet = std::chrono::milliseconds(100);

}  // namespace

ProgressThread::ProgressThread(std::chrono::microseconds busy_interval,
                               std::chrono::microseconds idle_interval)
    : busy_interval_(busy_interval),
      idle_interval_(idle_interval),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (!wake_fd_.valid()) {
    LARDER_LOG_WARN("eventfd failed ({}); progress stops within {} us of finalize",
                    log::errno_text(errno), idle_interval_.count());
  }
}

ProgressThread::~ProgressThread() {
  stop();
}

void ProgressThread::add(ProgressSource source) {
  sources_.push_back(std::move(source));
}

void ProgressThread::start() {
  evented_.store(event_driven(), std::memory_order_relaxed);
  thread_ = std::thread([this] { run(); });
}

void ProgressThread::stop() {
  stopping_.store(true, std::memory_order_release);
  if (wake_fd_.valid()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = sys::write(wake_fd_.get(), &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
}

void ProgressThread::notify_activity() noexcept {
  // Called on every read: without a polled source nothing uses it, so no clock read either.
  if (evented_.load(std::memory_order_relaxed)) return;
  last_activity_ns_.store(now_ns(), std::memory_order_relaxed);
  // A thread backed off towards the idle interval polls now (one write, only then): the answer
  // to this rank's request is then received within the busy interval, not the idle one.
  if (backed_off_.exchange(false, std::memory_order_acq_rel) && wake_fd_.valid()) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = sys::write(wake_fd_.get(), &one, sizeof one);
  }
}

void ProgressThread::sleep(std::chrono::microseconds timeout) {
  std::vector<pollfd> fds;
  for (const ProgressSource& s : sources_) {
    if (s.event_fd < 0) continue;
    if (s.arm && !s.arm()) return;  // events pending: progress again without sleeping
    fds.push_back(pollfd{s.event_fd, POLLIN, 0});
  }
  if (wake_fd_.valid()) fds.push_back(pollfd{wake_fd_.get(), POLLIN, 0});
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  const timespec ts{
      static_cast<time_t>(secs.count()),
      static_cast<long>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(timeout - secs).count())};
  const int ready = ::ppoll(fds.data(), fds.size(), &ts, nullptr);
  if (ready < 0 && errno != EINTR) {
    LARDER_LOG_LIMITED(kWarn, "ppoll in the progress thread failed: {}", log::errno_text(errno));
  }
  if (ready > 0 && wake_fd_.valid() && (fds.back().revents & POLLIN) != 0 &&
      !stopping_.load(std::memory_order_acquire)) {
    std::uint64_t count = 0;  // a wake-up by notify_activity: consumed (non-blocking)
    [[maybe_unused]] const ssize_t n = sys::read(wake_fd_.get(), &count, sizeof count);
  }
}

bool ProgressThread::event_driven() const noexcept {
  return wake_fd_.valid() && std::all_of(sources_.begin(), sources_.end(),
                                         [](const ProgressSource& s) { return s.event_fd >= 0; });
}

void ProgressThread::run() {
  pthread_setname_np(pthread_self(), "larder-progress");
  // Timed polling costs CPU on every rank of the node (each wake-up is a context switch, the
  // ranks' threads share the cores): only a source without a descriptor (MPI) needs it.
  const bool evented = evented_.load(std::memory_order_relaxed);
  // Idle until there is activity: the first request of another rank waits at most the idle
  // interval, and this rank's own (notify_activity) wakes the thread at once.
  auto interval = idle_interval_;
  while (!stopping_.load(std::memory_order_acquire)) {
    bool worked = false;
    for (const ProgressSource& source : sources_) {
      try {
        worked = source.progress() || worked;
      } catch (...) {
        LARDER_LOG_LIMITED(kError, "a progress source threw; continuing");
      }
    }
    passes_.fetch_add(1, std::memory_order_relaxed);
    if (worked) {
      // Requests keep arriving while other ranks are busy: a polled source stays eager for the
      // activity window after the last one, as after this rank's own reads.
      if (!evented) last_activity_ns_.store(now_ns(), std::memory_order_relaxed);
      interval = busy_interval_;
      continue;  // drain: UCX must be progressed until idle before it can be armed
    }
    if (evented) {
      sleep(std::max(idle_interval_,
                     std::chrono::duration_cast<std::chrono::microseconds>(kEventSafetyNet)));
      continue;
    }
    const bool recent =
        now_ns() - last_activity_ns_.load(std::memory_order_relaxed) < kActivityWindowNs;
    interval = recent ? busy_interval_ : std::min(interval * 2, idle_interval_);
    backed_off_.store(interval > busy_interval_, std::memory_order_release);
    sleep(interval);
    backed_off_.store(false, std::memory_order_relaxed);
  }
}

}  // namespace larder
