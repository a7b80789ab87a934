// Background: tasks that a caller hands off instead of running them itself, run on up to `width`
// threads of their own, oldest first. List-ahead uses it (docs/protocol.md, "List-ahead and small
// files"): the call that lists a directory returns its listing at once, and the directory's
// entries are resolved here, several directories at a time.
//
// Bounded: at most `queue_limit` tasks wait; submit() refuses more (the caller runs the task
// itself, which slows the producer down to the rate the threads keep up with). Threads start on
// demand, up to `width`, and wait on a condition variable when idle. stop() drops the tasks not
// started (a task must leave nothing half done when it is dropped: list-ahead's tasks claim
// nothing before they start), lets the running ones finish and joins the threads.
#ifndef LARDER_RUNTIME_CACHE_BACKGROUND_HPP_
#define LARDER_RUNTIME_CACHE_BACKGROUND_HPP_

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace larder {

class Background {
 public:
  Background(std::size_t width, std::size_t queue_limit) : width_(width), limit_(queue_limit) {}
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  ~Background() { stop(); }

  // Queues `task`. False, with the task not taken, when width is 0, the queue is full, the
  // runner has stopped, or no thread could be started for it.
  bool submit(std::function<void()> task);
  // Returns once every task queued before or during the call has finished (none queued, none
  // running).
  void settle();
  // Takes no more tasks, drops the queued ones, waits for the running ones, joins the threads.
  // Idempotent.
  void stop() noexcept;
  // Tasks run to their end since the start (tests, stats).
  std::uint64_t completed() const;
  // True once stop() has begun (the queue is dropped by then).
  bool stopped() const;

 private:
  void run() noexcept;

  const std::size_t width_;
  const std::size_t limit_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;          // a task was queued, or stop
  std::condition_variable idle_cv_;          // a task ended
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  std::vector<std::thread> threads_;         // guarded by mu_
  std::size_t idle_ = 0;                     // guarded by mu_: threads waiting for a task
  std::size_t running_ = 0;                  // guarded by mu_: tasks being run
  std::uint64_t completed_ = 0;              // guarded by mu_
  bool stopped_ = false;                     // guarded by mu_
};

}  // namespace larder

#endif  // LARDER_RUNTIME_CACHE_BACKGROUND_HPP_
