#include "runtime/directory/local_directory.hpp"

#include <cerrno>

namespace larder {

Result<Claim> LocalDirectory::acquire(const Key& key, unsigned flags) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if ((flags & kClaimIt) == 0) return Claim{Claim::Outcome::kAbsent, {}, -1, 0};
    if (entries_.size() >= capacity_) {
      return Status(Errc::kNoSpace, ENOSPC, "directory is full");
    }
    it = entries_.emplace(key, Entry{Claim::Outcome::kLoading, Payload{}}).first;
    if ((flags & kTicket) != 0) ++it->second.tickets;
    return Claim{Claim::Outcome::kClaimed, {}, 0, 0};
  }
  Claim c{it->second.outcome, it->second.payload, 0, 0};
  if ((flags & kTicket) != 0) c.ticket = it->second.tickets++;
  return c;
}

Result<Claim> LocalDirectory::wait(const Key& key, const Claim& /*loading*/,
                                   std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  const bool done = changed_.wait_for(lock, timeout, [&] {
    auto it = entries_.find(key);
    return it == entries_.end() || it->second.outcome != Claim::Outcome::kLoading;
  });
  if (!done) return Status(Errc::kTimeout, ETIMEDOUT, "timed out waiting for a loading entry");
  auto it = entries_.find(key);
  if (it == entries_.end()) return Status(Errc::kNotFound, ENOENT, "entry vanished");
  return Claim{it->second.outcome, it->second.payload, 0, 0};
}

Result<Claim> LocalDirectory::watch(const Key& key, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  const bool done = changed_.wait_for(lock, timeout, [&] {
    auto it = entries_.find(key);
    return it != entries_.end() && it->second.outcome != Claim::Outcome::kLoading;
  });
  if (!done) return Status(Errc::kTimeout, ETIMEDOUT, "timed out waiting for the entry");
  auto it = entries_.find(key);
  return Claim{it->second.outcome, it->second.payload, 0, 0};
}

Status LocalDirectory::finish(const Key& key, Claim::Outcome outcome, const Payload& payload) {
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.outcome != Claim::Outcome::kLoading) {
      return {Errc::kInternal, EINVAL, "finishing an entry that is not loading"};
    }
    it->second.outcome = outcome;
    it->second.payload = payload;
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
