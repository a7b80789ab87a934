#include "runtime/cache/prefetch_stage.hpp"

#include <algorithm>
#include <cstring>

namespace larder {

PrefetchStage::Reserved PrefetchStage::reserve(const Key& key, std::uint64_t version,
                                               std::uint64_t length, Place at) {
  std::lock_guard lock(mu_);
  if (read_.erase(key) != 0) return Reserved::kRead;
  if (entries_.contains(key)) return Reserved::kHeld;
  if (bytes_ + length > capacity_) return Reserved::kFull;
  Entry& e = entries_[key];
  e.version = version;
  e.length = length;
  e.at = at;
  bytes_ += length;
  entries_n_.store(entries_.size(), std::memory_order_relaxed);
  return Reserved::kYes;
}

void PrefetchStage::fill(const Key& key, std::unique_ptr<std::byte[]> bytes, bool copied) {
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.filled) return;
    it->second.filled = true;
    it->second.copied = copied;
    it->second.bytes = std::move(bytes);
    if (it->second.bytes == nullptr) erase(it);  // readers waiting go to the PFS
  }
  filled_.notify_all();
}

PrefetchStage::Took PrefetchStage::take(const Key& key, std::uint64_t version, std::uint64_t offset,
                                        std::span<std::byte> into, bool mark, bool* copied) {
  std::unique_lock lock(mu_);
  auto it = entries_.find(key);
  bool waited = false;
  while (it != entries_.end() && !it->second.filled) {
    waited = true;
    filled_.wait(lock);
    it = entries_.find(key);
  }
  if (it == entries_.end() || it->second.version != version ||
      offset + into.size() > it->second.length) {
    if (it != entries_.end()) erase(it);  // another version: no read wants these bytes
    if (mark && read_.insert(key).second) {
      read_order_.push_back(key);
      if (read_order_.size() > kReadMarks) {
        read_.erase(read_order_.front());
        read_order_.pop_front();
      }
    }
    return Took::kAbsent;
  }
  Entry& e = it->second;
  if (copied != nullptr) *copied = e.copied;
  std::memcpy(into.data(), e.bytes.get() + offset, into.size());
  e.taken += into.size();
  if (e.taken >= e.length) erase(it);
  return waited ? Took::kWaited : Took::kTaken;
}

PrefetchStage::Dropped PrefetchStage::drop_passed(std::uint64_t generation, std::uint64_t position,
                                                  std::uint64_t lag) {
  Dropped d;
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    const Place at = it->second.at;
    const bool passed = at.generation < generation ? position > lag : at.entry + lag < position;
    if (passed && it->second.filled) {
      if (it->second.taken == 0) {  // partly read: used
        ++d.chunks;
        d.bytes += it->second.length;
      }
      bytes_ -= it->second.length;
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  entries_n_.store(entries_.size(), std::memory_order_relaxed);
  return d;
}

PrefetchStage::Dropped PrefetchStage::drop_all() {
  Dropped d;
  std::unique_lock lock(mu_);
  filled_.wait(lock, [&] {
    return std::all_of(entries_.begin(), entries_.end(),
                       [](const auto& kv) { return kv.second.filled; });
  });
  for (const auto& [key, e] : entries_) {
    if (e.taken > 0) continue;  // partly read: used
    ++d.chunks;
    d.bytes += e.length;
  }
  entries_.clear();
  entries_n_.store(0, std::memory_order_relaxed);
  bytes_ = 0;
  read_.clear();
  read_order_.clear();
  return d;
}

bool PrefetchStage::holds(const Key& key, std::uint64_t version) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  return it != entries_.end() && it->second.version == version;
}

bool PrefetchStage::full() const {
  std::lock_guard lock(mu_);
  return bytes_ >= capacity_;
}

std::uint64_t PrefetchStage::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

void PrefetchStage::erase(std::unordered_map<Key, Entry, KeyHash>::iterator it) {
  bytes_ -= it->second.length;
  entries_.erase(it);
  entries_n_.store(entries_.size(), std::memory_order_relaxed);
}

}  // namespace larder
