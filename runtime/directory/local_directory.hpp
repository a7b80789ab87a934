// LocalDirectory: the Directory of a single process (serial programs, unit tests).
// A hash map under a mutex, with a condition variable for waiters; `capacity` entries at most,
// so tests can fill it.
#ifndef LARDER_RUNTIME_DIRECTORY_LOCAL_DIRECTORY_HPP_
#define LARDER_RUNTIME_DIRECTORY_LOCAL_DIRECTORY_HPP_

#include <condition_variable>
#include <mutex>
#include <unordered_map>

#include "runtime/directory/directory.hpp"

namespace larder {

class LocalDirectory final : public Directory {
 public:
  explicit LocalDirectory(std::size_t capacity) : capacity_(capacity) {}

  Result<Claim> acquire(const Key& key, unsigned flags = kClaimIt) override;
  Result<Claim> wait(const Key& key, const Claim& loading,
                     std::chrono::milliseconds timeout) override;
  Status publish(const Key& key, const Payload& payload) override;
  Status abandon(const Key& key) override;
  Result<Claim> watch(const Key& key, std::chrono::milliseconds timeout) override;

 private:
  struct Entry {
    Claim::Outcome outcome;
    Payload payload;
    std::uint64_t tickets = 0;
  };
  Status finish(const Key& key, Claim::Outcome outcome, const Payload& payload);

  const std::size_t capacity_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::unordered_map<Key, Entry, KeyHash> entries_;  // guarded by mu_
};

}  // namespace larder

#endif  // LARDER_RUNTIME_DIRECTORY_LOCAL_DIRECTORY_HPP_
