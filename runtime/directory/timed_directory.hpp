// TimedDirectory: a Directory that adds the time spent in another to the stats: directory.ns
// for lookups, claims and publications (the round trips), waits and wait_ns for waits on
// another rank's load. The Cache reaches its directory through one.
#ifndef LARDER_RUNTIME_DIRECTORY_TIMED_DIRECTORY_HPP_
#define LARDER_RUNTIME_DIRECTORY_TIMED_DIRECTORY_HPP_

#include <chrono>

#include "runtime/directory/directory.hpp"
#include "runtime/stats/stats.hpp"

namespace larder {

class TimedDirectory final : public Directory {
 public:
  TimedDirectory(Directory& inner, Stats& stats) : inner_(inner), stats_(stats) {}

  Result<Claim> acquire(const Key& key, unsigned flags = kClaimIt) override {
    const auto start = now();
    auto r = inner_.acquire(key, flags);
    since(start, Counter::directory_ns);
    return r;
  }
  void acquire_many(std::span<const Lookup> lookups, std::span<Result<Claim>> out) override {
    const auto start = now();
    inner_.acquire_many(lookups, out);
    since(start, Counter::directory_ns);
  }
  Result<Claim> wait(const Key& key, const Claim& loading,
                     std::chrono::milliseconds timeout) override {
    stats_.add(Counter::waits);
    const auto start = now();
    auto r = inner_.wait(key, loading, timeout);
    since(start, Counter::wait_ns);
    return r;
  }
  void wait_many(std::span<const Key> keys, std::span<const Claim> loading,
                 std::chrono::milliseconds timeout, std::span<Result<Claim>> out) override {
    stats_.add(Counter::waits, keys.size());
    const auto start = now();
    inner_.wait_many(keys, loading, timeout, out);
    since(start, Counter::wait_ns);
  }
  Status publish(const Key& key, const Payload& payload) override {
    const auto start = now();
    Status s = inner_.publish(key, payload);
    since(start, Counter::directory_ns);
    return s;
  }
  void finish_many(std::span<const Final> finals, std::span<Status> out) override {
    const auto start = now();
    inner_.finish_many(finals, out);
    since(start, Counter::directory_ns);
  }
  Result<Claim> watch(const Key& key, std::chrono::milliseconds timeout) override {
    stats_.add(Counter::waits);
    const auto start = now();
    auto r = inner_.watch(key, timeout);
    since(start, Counter::wait_ns);
    return r;
  }
  Status abandon(const Key& key) override {
    const auto start = now();
    Status s = inner_.abandon(key);
    since(start, Counter::directory_ns);
    return s;
  }

 private:
  static std::chrono::steady_clock::time_point now() noexcept {
    return std::chrono::steady_clock::now();
  }
  void since(std::chrono::steady_clock::time_point start, Counter c) noexcept {
    stats_.add(c, static_cast<std::uint64_t>(
                      std::chrono::duration_cast<std::chrono::nanoseconds>(now() - start).count()));
  }

  Directory& inner_;
  Stats& stats_;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_DIRECTORY_TIMED_DIRECTORY_HPP_
