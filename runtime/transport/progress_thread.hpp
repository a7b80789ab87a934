// ProgressThread: drives MPI and UCX progress for this rank, so that one-sided operations that
// target this rank complete while the application is busy outside MPI.
//
// It never spins. After each pass it sleeps in ppoll(2) on the event descriptors of the sources
// that have one (UCX arms its worker and sleeps on its event fd) and on its own wake-up eventfd.
// When every source has a descriptor (the UCX transport) it sleeps until one fires (with a
// 100 ms safety net); when one must be polled (MPI has no event descriptor) the timeout is short
// after recent activity (`busy_interval`), backing off exponentially to `idle_interval`. Activity
// is this rank's reads and requests (notify_activity, which also wakes a backed-off thread) and
// work the thread itself found (requests from other ranks).
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
};

class ProgressThread {
 public:
  ProgressThread(std::chrono::microseconds busy_interval, std::chrono::microseconds idle_interval);
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

  const std::chrono::microseconds busy_interval_;
  const std::chrono::microseconds idle_interval_;
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
