#include "runtime/transport/progress_thread.hpp"

#include <pthread.h>

#include "runtime/common/log.hpp"

namespace larder {
namespace {

std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

constexpr std::int64_t kActivityWindowNs = 50'000'000;  // eager polling lasts 50 ms after activity

}  // namespace

ProgressThread::ProgressThread(std::chrono::microseconds busy_interval,
                               std::chrono::microseconds idle_interval)
    : busy_interval_(busy_interval), idle_interval_(idle_interval) {}

ProgressThread::~ProgressThread() {
  stop();
}

void ProgressThread::add(Poller poller) {
  pollers_.push_back(std::move(poller));
}

void ProgressThread::start() {
  thread_ = std::thread([this] { run(); });
}

void ProgressThread::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ProgressThread::notify_activity() noexcept {
  last_activity_ns_.store(now_ns(), std::memory_order_relaxed);
}

void ProgressThread::run() {
  pthread_setname_np(pthread_self(), "larder-progress");
  auto interval = busy_interval_;
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    bool worked = false;
    for (const Poller& poll : pollers_) {
      try {
        worked = poll() || worked;
      } catch (...) {
        LARDER_LOG_LIMITED(kError, "a progress poller threw; continuing");
      }
    }
    passes_.fetch_add(1, std::memory_order_relaxed);
    const bool recent =
        now_ns() - last_activity_ns_.load(std::memory_order_relaxed) < kActivityWindowNs;
    if (worked || recent) {
      interval = busy_interval_;
    } else {
      interval = std::min(interval * 2, idle_interval_);
    }
    lock.lock();
    wake_.wait_for(lock, interval, [this] { return stopping_; });
  }
}

}  // namespace larder
