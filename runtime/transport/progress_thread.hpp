// ProgressThread: drives MPI and UCX progress for this rank, so that one-sided operations that
// target this rank complete while the application is busy outside MPI.
//
// It never spins: after recent activity it polls every `busy_interval`, otherwise it backs off
// exponentially to `idle_interval`. Pollers can also block in their own event wait (UCX arms
// its worker and sleeps on the event fd) by returning a wait hint.
#ifndef LARDER_RUNTIME_TRANSPORT_PROGRESS_THREAD_HPP_
#define LARDER_RUNTIME_TRANSPORT_PROGRESS_THREAD_HPP_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace larder {

class ProgressThread {
 public:
  // One pass of progress; returns true when it found work.
  using Poller = std::function<bool()>;

  ProgressThread(std::chrono::microseconds busy_interval, std::chrono::microseconds idle_interval);
  ProgressThread(const ProgressThread&) = delete;
  ProgressThread& operator=(const ProgressThread&) = delete;
  ~ProgressThread();

  void add(Poller poller);  // before start()
  void start();
  void stop();  // joins; idempotent
  // Reads are under way somewhere in this rank: poll eagerly for a while. Cheap, lock-free.
  void notify_activity() noexcept;
  std::uint64_t passes() const noexcept { return passes_.load(std::memory_order_relaxed); }

 private:
  void run();

  const std::chrono::microseconds busy_interval_;
  const std::chrono::microseconds idle_interval_;
  std::vector<Poller> pollers_;
  std::atomic<std::int64_t> last_activity_ns_{0};  // relaxed: a hint
  std::atomic<std::uint64_t> passes_{0};           // relaxed: statistics
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_TRANSPORT_PROGRESS_THREAD_HPP_
