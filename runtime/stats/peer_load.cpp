#include "runtime/stats/peer_load.hpp"

#include <algorithm>

namespace larder {

void PeerLoad::add(int target, std::uint64_t ops, std::uint64_t bytes) {
  if (target < 0 || target >= ranks_) return;
  std::lock_guard lock(mu_);
  Load& l = load_[target];
  l.ops += ops;
  l.bytes += bytes;
}

std::vector<PeerLoad::Entry> PeerLoad::entries() const {
  std::vector<Entry> out;
  {
    std::lock_guard lock(mu_);
    out.reserve(load_.size());
    for (const auto& [target, l] : load_) out.push_back(Entry{target, l.ops, l.bytes});
  }
  std::sort(out.begin(), out.end(),
            [](const Entry& a, const Entry& b) { return a.target < b.target; });
  return out;
}

std::size_t PeerLoad::size() const {
  std::lock_guard lock(mu_);
  return load_.size();
}

}  // namespace larder
