// FakeMessengers: the Messenger of each rank of an in-process network. Each rank's messages are
// run by that rank's own dispatcher thread (as the progress thread runs them), so requests and
// answers really cross threads, and a rank can be made to drop or hold its messages.
#ifndef LARDER_TESTS_SUPPORT_FAKE_MESSENGERS_HPP_
#define LARDER_TESTS_SUPPORT_FAKE_MESSENGERS_HPP_

#include <array>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/transport/messenger.hpp"

namespace larder::testing {

class FakeMessengers;

class FakeMessenger final : public Messenger {
 public:
  FakeMessenger(FakeMessengers& net, int rank) : net_(net), rank_(rank) {}
  FakeMessenger(const FakeMessenger&) = delete;
  FakeMessenger& operator=(const FakeMessenger&) = delete;
  FakeMessenger(FakeMessenger&&) = delete;
  FakeMessenger& operator=(FakeMessenger&&) = delete;
  ~FakeMessenger() override { stop(); }
  void on(Channel channel, Handler handler) override {
    handlers_[static_cast<std::size_t>(channel)] = std::move(handler);
  }
  Status send(int to, Channel channel, std::span<const std::byte> body) override;

  void deliver(int from, Channel channel, std::vector<std::byte> body) {
    std::lock_guard lock(mu_);
    if (dead_) return;  // a dead rank neither answers nor keeps anything
    queue_.push_back(Message{from, channel, std::move(body)});
    changed_.notify_all();
  }
  void start() {
    thread_ = std::thread([this] { run(); });
  }
  void stop() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      changed_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }
  void set_dead() {
    std::lock_guard lock(mu_);
    dead_ = true;
    queue_.clear();
  }
  // Holds incoming messages until release() (a slow rank).
  void hold() {
    std::lock_guard lock(mu_);
    held_ = true;
  }
  void release() {
    std::lock_guard lock(mu_);
    held_ = false;
    changed_.notify_all();
  }
  std::size_t queued() {
    std::lock_guard lock(mu_);
    return queue_.size();
  }
  // Waits until every queued message has been handled.
  void drain() {
    std::unique_lock lock(mu_);
    changed_.wait(lock, [&] { return queue_.empty() && !busy_; });
  }

 private:
  struct Message {
    int from;
    Channel channel;
    std::vector<std::byte> body;
  };
  void run() {
    std::unique_lock lock(mu_);
    while (true) {
      changed_.wait(lock, [&] { return stopping_ || (!held_ && !queue_.empty()); });
      if (stopping_) return;
      Message m = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
      lock.unlock();
      const Handler& h = handlers_[static_cast<std::size_t>(m.channel)];
      if (h) h(m.from, m.body);
      lock.lock();
      busy_ = false;
      changed_.notify_all();
    }
  }

  FakeMessengers& net_;
  const int rank_;
  std::array<Handler, kChannelCount> handlers_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Message> queue_;
  bool stopping_ = false;
  bool dead_ = false;
  bool held_ = false;
  bool busy_ = false;
  std::thread thread_;
};

class FakeMessengers {
 public:
  explicit FakeMessengers(int ranks) {
    for (int r = 0; r < ranks; ++r) all_.push_back(std::make_unique<FakeMessenger>(*this, r));
  }
  FakeMessengers(const FakeMessengers&) = delete;
  FakeMessengers& operator=(const FakeMessengers&) = delete;
  FakeMessengers(FakeMessengers&&) = delete;
  FakeMessengers& operator=(FakeMessengers&&) = delete;
  ~FakeMessengers() { stop(); }
  FakeMessenger& operator[](int r) { return *all_[static_cast<std::size_t>(r)]; }
  // After every rank's handlers are registered.
  void start() {
    for (auto& m : all_) m->start();
  }
  void stop() {
    for (auto& m : all_) m->stop();
  }

 private:
  std::vector<std::unique_ptr<FakeMessenger>> all_;
};

inline Status FakeMessenger::send(int to, Channel channel, std::span<const std::byte> body) {
  if (body.size() > kMaxMessage) return {Errc::kInvalidArgument, EMSGSIZE, "too large"};
  net_[to].deliver(rank_, channel, {body.begin(), body.end()});
  return {};
}

}  // namespace larder::testing

#endif  // LARDER_TESTS_SUPPORT_FAKE_MESSENGERS_HPP_
