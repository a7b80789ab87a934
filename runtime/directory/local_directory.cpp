#include "runtime/directory/local_directory.hpp"

#include <cerrno>

namespace larder {

Result<Claim> LocalDirectory::acquire(const Key& key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (entries_.size() >= capacity_) {
      return Status(Errc::kNoSpace, ENOSPC, "directory is full");
    }
    entries_.emplace(key, Entry{Claim::Outcome::kLoading, Payload{}});
    return Claim{Claim::Outcome::kClaimed, {}};
  }
  return Claim{it->second.outcome, it->second.payload};
}

Result<Claim> LocalDirectory::wait(const Key& key, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  const bool done = changed_.wait_for(lock, timeout, [&] {
    auto it = entries_.find(key);
    return it == entries_.end() || it->second.outcome != Claim::Outcome::kLoading;
  });
  if (!done) return Status(Errc::kTimeout, ETIMEDOUT, "timed out waiting for a loading entry");
  auto it = entries_.find(key);
  if (it == entries_.end()) return Status(Errc::kNotFound, ENOENT, "entry vanished");
  return Claim{it->second.outcome, it->second.payload};
}

Status LocalDirectory::finish(const Key& key, Claim::Outcome outcome, const Payload& payload) {
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.outcome != Claim::Outcome::kLoading) {
      return Status(Errc::kInternal, EINVAL, "finishing an entry that is not loading");
    }
    it->second = Entry{outcome, payload};
  }
  changed_.notify_all();
  return {};
}

Status LocalDirectory::publish(const Key& key, const Payload& payload) {
  return finish(key, Claim::Outcome::kReady, payload);
}

Status LocalDirectory::abandon(const Key& key) {
  return finish(key, Claim::Outcome::kFailed, Payload{});
}

}  // namespace larder
