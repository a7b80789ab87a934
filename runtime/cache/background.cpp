#include "runtime/cache/background.hpp"

#include <exception>
#include <system_error>
#include <utility>

#include "runtime/common/log.hpp"

namespace larder {

bool Background::submit(std::function<void()> task) {
  std::unique_lock lock(mu_);
  if (stopped_ || width_ == 0 || queue_.size() >= limit_) return false;
  if (idle_ <= queue_.size() && threads_.size() < width_) {
    try {
      threads_.emplace_back([this] { run(); });
    } catch (const std::system_error& e) {
      if (threads_.empty()) {  // nothing would run it
        LARDER_LOG_LIMITED(kInfo, "a background thread could not start: {}", e.what());
        return false;
      }
    }
  }
  queue_.push_back(std::move(task));
  lock.unlock();
  work_cv_.notify_one();
  return true;
}

void Background::run() noexcept {
  std::unique_lock lock(mu_);
  for (;;) {
    ++idle_;
    work_cv_.wait(lock, [this] { return stopped_ || !queue_.empty(); });
    --idle_;
    if (queue_.empty()) return;  // stopped, nothing left to run
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    try {
      task();
    } catch (const std::exception& e) {  // the task's work is abandoned; its readers read the PFS
      LARDER_LOG_LIMITED(kWarn, "a background task failed: {}", e.what());
    }
    task = nullptr;  // what it holds goes before the count says it ended
    lock.lock();
    --running_;
    ++completed_;
    idle_cv_.notify_all();
  }
}

void Background::settle() {
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && running_ == 0; });
}

void Background::stop() noexcept {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
    queue_.clear();
    threads.swap(threads_);
  }
  work_cv_.notify_all();
  for (std::thread& t : threads) {
    if (t.joinable()) t.join();
  }
}

bool Background::stopped() const {
  std::lock_guard lock(mu_);
  return stopped_;
}

std::uint64_t Background::completed() const {
  std::lock_guard lock(mu_);
  return completed_;
}

}  // namespace larder
