#include "runtime/cache/remote_copies.hpp"

namespace larder {

RemoteCopies::Bytes RemoteCopies::find(const ChunkRecord& record) {
  std::lock_guard lock(mu_);
  auto it = copies_.find(id_of(record));
  if (it == copies_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second.position);
  return it->second.bytes;
}

bool RemoteCopies::note_partial_read(const ChunkRecord& record) {
  const Id id = id_of(record);
  std::lock_guard lock(mu_);
  if (auto it = seen_.find(id); it != seen_.end()) {
    seen_order_.erase(it->second);
    seen_.erase(it);
    return true;
  }
  if (seen_.size() >= kSeenLimit) {
    seen_.erase(seen_order_.back());
    seen_order_.pop_back();
  }
  seen_order_.push_front(id);
  seen_.emplace(id, seen_order_.begin());
  return false;
}

void RemoteCopies::put(const ChunkRecord& record, Bytes bytes) {
  const Id id = id_of(record);
  std::lock_guard lock(mu_);
  if (copies_.count(id) != 0) return;
  bytes_ += bytes->size();
  lru_.push_front(id);
  copies_.emplace(id, Entry{std::move(bytes), lru_.begin()});
  while (bytes_ > budget_ && !lru_.empty()) {
    auto victim = copies_.find(lru_.back());
    bytes_ -= victim->second.bytes->size();
    copies_.erase(victim);
    lru_.pop_back();
  }
}

std::uint64_t RemoteCopies::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace larder
