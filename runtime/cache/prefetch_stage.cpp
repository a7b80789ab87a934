#include "runtime/cache/prefetch_stage.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>

namespace larder {
namespace {

// Records `key` as the newest of `map`'s keys in `order`, forgetting the oldest past `bound`.
template <class Map>
void remember(Map& map, std::deque<Key>& order, const Key& key, std::size_t bound) {
  order.push_back(key);
  if (order.size() > bound) {
    map.erase(order.front());
    order.pop_front();
  }
}

}  // namespace

PrefetchStage::Reserved PrefetchStage::reserve(const Key& key, std::uint64_t version,
                                               std::uint64_t length, Place at, Dropped* evicted) {
  std::lock_guard lock(mu_);
  if (auto m = read_.find(key); m != read_.end()) {
    const Place read_at = m->second;
    read_.erase(m);  // the oldest-first order forgets it when it comes round
    // For the entry that read was for (or an older schedule's): its bytes were read.
    if (at.generation < read_at.generation ||
        (at.generation == read_at.generation && at.entry < read_at.entry + kMarkReach)) {
      return Reserved::kRead;
    }
  }
  if (auto it = entries_.find(key); it != entries_.end()) {
    add_uses(it->second, at.generation, std::span(&at.entry, 1));
    return Reserved::kHeld;
  }
  while (bytes_ + length > capacity_) {
    auto victim = furthest_after(at);
    if (victim == entries_.end()) return Reserved::kFull;
    if (evicted != nullptr) {
      ++evicted->chunks;
      evicted->bytes += victim->second.length;
    }
    erase(victim);
  }
  Entry& e = entries_[key];
  e.version = version;
  e.length = length;
  e.generation = at.generation;
  e.uses.assign(1, at.entry);
  if (auto x = expected_.find(key); x != expected_.end()) {
    add_uses(e, x->second.generation, x->second.uses);
    expected_.erase(x);  // the oldest-first order forgets it when it comes round
  }
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

void PrefetchStage::add_uses(Entry& e, std::uint64_t generation,
                             std::span<const std::uint64_t> uses) {
  if (generation > e.generation) {
    e.generation = generation;  // a new schedule names it again: its entries stand for the old
    e.uses.clear();
  } else if (generation < e.generation) {
    return;
  }
  for (const std::uint64_t u : uses) {
    auto at = std::lower_bound(e.uses.begin(), e.uses.end(), u);
    if (at == e.uses.end() || *at != u) e.uses.insert(at, u);
  }
}

std::uint64_t PrefetchStage::next_use(const Entry& e, std::uint64_t generation) {
  return e.generation < generation ? UINT64_MAX : e.uses.front();
}

std::unordered_map<Key, PrefetchStage::Entry, KeyHash>::iterator PrefetchStage::furthest_after(
    Place at) {
  auto best = entries_.end();
  std::uint64_t best_use = at.entry;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    // A chunk being loaded stays: a read may be waiting for it.
    if (!it->second.filled || it->second.generation > at.generation) continue;
    const std::uint64_t use = next_use(it->second, at.generation);
    if (use > best_use) {
      best = it;
      best_use = use;
    }
  }
  return best;
}

void PrefetchStage::expect(const Key& key, Place at) {
  std::lock_guard lock(mu_);
  if (auto it = entries_.find(key); it != entries_.end()) {
    add_uses(it->second, at.generation, std::span(&at.entry, 1));
    return;
  }
  auto [x, fresh] = expected_.try_emplace(key);
  if (fresh || at.generation > x->second.generation) {
    x->second.generation = at.generation;
    x->second.uses.assign(1, at.entry);
  } else if (at.generation == x->second.generation) {
    x->second.uses.push_back(at.entry);
  }
  if (fresh) remember(expected_, expected_order_, key, kReadMarks);
}

PrefetchStage::Took PrefetchStage::take(const Key& key, std::uint64_t version, std::uint64_t offset,
                                        std::span<std::byte> into, bool mark, bool* copied,
                                        Place position) {
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
    if (mark && read_.insert_or_assign(key, position).second) {
      remember(read_, read_order_, key, kReadMarks);
    }
    return Took::kAbsent;
  }
  Entry& e = it->second;
  if (copied != nullptr) *copied = e.copied;
  std::memcpy(into.data(), e.bytes.get() + offset, into.size());
  e.used = true;
  e.taken += into.size();
  if (e.taken >= e.length) {  // the next entry's reads are done
    e.taken = 0;
    e.uses.erase(e.uses.begin());
    if (e.uses.empty()) erase(it);
  }
  return waited ? Took::kWaited : Took::kTaken;
}

PrefetchStage::Dropped PrefetchStage::drop_passed(std::uint64_t generation, std::uint64_t position,
                                                  std::uint64_t lag) {
  Dropped d;
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    const Entry& e = it->second;
    const bool passed = e.generation < generation ? position > lag : e.uses.back() + lag < position;
    if (passed && it->second.filled) {
      if (!it->second.used) {  // partly read: used
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
    if (e.used) continue;  // partly read: used
    ++d.chunks;
    d.bytes += e.length;
  }
  entries_.clear();
  entries_n_.store(0, std::memory_order_relaxed);
  bytes_ = 0;
  read_.clear();
  read_order_.clear();
  expected_.clear();
  expected_order_.clear();
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

bool PrefetchStage::full_for(Place next) const {
  std::lock_guard lock(mu_);
  if (bytes_ < capacity_) return false;
  return std::none_of(entries_.begin(), entries_.end(), [&](const auto& kv) {
    const Entry& e = kv.second;
    return e.filled && e.generation <= next.generation && next_use(e, next.generation) > next.entry;
  });
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
