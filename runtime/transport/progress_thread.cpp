#include "runtime/transport/progress_thread.hpp"

#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
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

// Hot polling (ProgressThread's header): a sched_yield that returns after more than this gave
// the core to another thread. The node's cores are then busy, and polling hot beside them would
// take their time (measured: a third of all CPU time at 8 ranks on 2 cores, in context switches):
// for kContendedForNs the thread sleeps the busy interval between polls instead.
constexpr std::int64_t kYieldContendedNs = 20'000;
constexpr std::int64_t kContendedForNs = 10'000'000;

}  // namespace

ProgressThread::ProgressThread(std::chrono::microseconds busy_interval,
                               std::chrono::microseconds idle_interval,
                               std::chrono::microseconds hot_window)
    : busy_interval_(busy_interval),
      idle_interval_(idle_interval),
      hot_window_(hot_window),
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

bool ProgressThread::driven_elsewhere() const {
  return std::any_of(sources_.begin(), sources_.end(), [](const ProgressSource& s) {
    return s.driven_elsewhere && s.driven_elsewhere();
  });
}

bool ProgressThread::event_driven() const noexcept {
  return wake_fd_.valid() && std::all_of(sources_.begin(), sources_.end(),
                                         [](const ProgressSource& s) { return s.event_fd >= 0; });
}

bool ProgressThread::poll_sources() {
  bool worked = false;
  for (const ProgressSource& source : sources_) {
    try {
      worked = source.progress() || worked;
    } catch (...) {
      LARDER_LOG_LIMITED(kError, "a progress source threw; continuing");
    }
  }
  passes_.fetch_add(1, std::memory_order_relaxed);
  return worked;
}

void ProgressThread::run() {
  pthread_setname_np(pthread_self(), "larder-progress");
  // Polled sleeps are not stretched by the default 50 us timer slack.
  if (hot_window_.count() > 0) (void)::prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
  // Timed polling costs CPU on every rank of the node (each wake-up is a context switch, the
  // ranks' threads share the cores): only a source without a descriptor (MPI) needs it.
  const bool evented = evented_.load(std::memory_order_relaxed);
  const std::int64_t hot_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(hot_window_).count();
  std::int64_t worked_ns = 0;           // when a pass last found work (or a ring woke us)
  std::int64_t contended_until_ns = 0;  // hot polling sleeps instead of yielding until then
  std::int64_t slow_yields = 0;         // the recent share of yields that gave the core away
  // Idle until there is activity: the first request of another rank waits at most the idle
  // interval (or its ring), and this rank's own (notify_activity) wakes the thread at once.
  auto interval = idle_interval_;
  while (!stopping_.load(std::memory_order_acquire)) {
    if (poll_sources()) {
      // Requests keep arriving while other ranks are busy: a polled source stays eager for the
      // activity window after the last one, and hot for the hot window.
      if (!evented) {
        worked_ns = now_ns();
        last_activity_ns_.store(worked_ns, std::memory_order_relaxed);
      }
      interval = busy_interval_;
      continue;  // drain: UCX must be progressed until idle before it can be armed
    }
    if (evented) {
      sleep(std::max(idle_interval_,
                     std::chrono::duration_cast<std::chrono::microseconds>(kEventSafetyNet)));
      continue;
    }
    const std::int64_t now = now_ns();
    if (now - worked_ns < hot_ns && now >= contended_until_ns && !driven_elsewhere()) {
      sched_yield();  // hot: poll again as soon as nobody else wants the core
      // A yield that took long gave the core to another thread. When most do, the node's cores
      // are busy, and polling hot beside the ranks' work takes its time: for a while the thread
      // sleeps its interval between polls instead.
      const bool slow = now_ns() - now > kYieldContendedNs;
      slow_yields += ((slow ? 1024 : 0) - slow_yields) / 16;  // a moving share, in 1/1024
      if (slow_yields > 256) {
        contended_until_ns = now_ns() + kContendedForNs;
        slow_yields = 0;
      }
      continue;
    }
    const bool recent = now - last_activity_ns_.load(std::memory_order_relaxed) < kActivityWindowNs;
    interval = recent ? busy_interval_ : std::min(interval * 2, idle_interval_);
    backed_off_.store(interval > busy_interval_, std::memory_order_release);
    sleep(interval);
    backed_off_.store(false, std::memory_order_relaxed);
  }
}

}  // namespace larder
