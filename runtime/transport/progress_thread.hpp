// ProgressThread: drives MPI and UCX progress for this rank, so that one-sided operations that
// target this rank complete while the application is busy outside MPI.
//
// After each pass it sleeps in ppoll(2) on the event descriptors of the sources that have one
// (UCX arms its worker and sleeps on its event fd) and on its own wake-up eventfd. When every
// source has a descriptor (the UCX transport) it sleeps until one fires (with a 100 ms safety
// net). When one must be polled (MPI has no event descriptor), the thread adapts:
//   hot   for `hot_window` after it found work (another rank's request: more are likely on their
//         way, from a reader that waits for each answer), it polls again at once, yielding the
//         core between polls (sched_yield: whoever else is runnable goes first), unless another
//         thread of the rank drives the source meanwhile (ProgressSource::driven_elsewhere: a
//         waiting reader polls MPI itself), or most yields gave the core away (the node's cores
//         are busy: then it sleeps as below for a while);
//   busy  after recent activity (notify_activity) it sleeps `busy_interval` between polls;
//   idle  then the sleep backs off exponentially to `idle_interval`.
// So a lone reader's requests to an idle rank cost microseconds after the first, and when every
// rank reads at once, each waiting reader polls for itself while the progress threads sleep.
#ifndef LARDER_RUNTIME_TRANSPORT_PROGRESS_THREAD_HPP_
#define LARDER_RUNTIME_TRANSPORT_PROGRESS_THREAD_HPP_

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "runtime/common/unique_fd.hpp"

namespace larder {

struct ProgressSource {
  // One pass of progress; returns true when it found work.
  std::function<bool()> progress;
  // Optional: a descriptor that becomes readable when there is work, and the call that must
  // precede sleeping on it (false: not armed, events are pending, do not sleep).
  int event_fd = -1;
  std::function<bool()> arm;
  // Optional: true while another thread drives this source's progress (a reader waiting for an
  // answer polls it itself); the thread then does not poll hot beside it.
  std::function<bool()> driven_elsewhere;
};

class ProgressThread {
 public:
  ProgressThread(std::chrono::microseconds busy_interval, std::chrono::microseconds idle_interval,
                 std::chrono::microseconds hot_window = std::chrono::microseconds(0));
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;
  ProgressThread(ProgressThread&&) = delete;  // its thread captures `this`
  ProgressThread& operator=(ProgressThread&&) = delete;
  ~ProgressThread();

  void add(ProgressSource source);  // before start()
  void start();
  void stop();  // wakes and joins; idempotent
  // Reads or requests are under way in this rank: poll eagerly for a while, from now (a thread
  // sleeping towards the idle interval is woken). Lock-free; at most one write(2), and only
  // when the thread had backed off.
  void notify_activity() noexcept;
  std::uint64_t passes() const noexcept { return passes_.load(std::memory_order_relaxed); }
  // The thread is sleeping, or about to, for longer than the busy interval (for tests).
  bool backed_off() const noexcept { return backed_off_.load(std::memory_order_acquire); }
  // Every source has an event descriptor (and the wake-up eventfd exists): no timed polling.
  bool event_driven() const noexcept;

 private:
  void run();
  void sleep(std::chrono::microseconds timeout);
  bool poll_sources();  // one pass over the sources: true when one found work

  bool driven_elsewhere() const;

  const std::chrono::microseconds busy_interval_;
  const std::chrono::microseconds idle_interval_;
  const std::chrono::microseconds hot_window_;
  std::vector<ProgressSource> sources_;
  UniqueFd wake_fd_;                               // eventfd: stop() writes to it
  std::atomic<bool> stopping_{false};              // release/acquire with wake_fd_
  std::atomic<bool> evented_{false};               // event_driven(), fixed at start()
  std::atomic<std::int64_t> last_activity_ns_{0};  // relaxed: a hint
  std::atomic<bool> backed_off_{false};            // sleeping longer than the busy interval
  std::atomic<std::uint64_t> passes_{0};           // relaxed: statistics
  std::thread thread_;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_TRANSPORT_PROGRESS_THREAD_HPP_
