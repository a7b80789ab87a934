#include "runtime/stats/peer_load.hpp"

namespace larder {

PeerLoad::PeerLoad(int ranks)
    : ranks_(ranks > 0 ? ranks : 1),
      ops_(new std::atomic<std::uint64_t>[static_cast<std::size_t>(ranks_)]()),
      bytes_(new std::atomic<std::uint64_t>[static_cast<std::size_t>(ranks_)]()) {}

namespace {
std::vector<std::uint64_t> copy(const std::atomic<std::uint64_t>* a, int n) {
  std::vector<std::uint64_t> out(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    out[static_cast<std::size_t>(i)] = a[i].load(std::memory_order_relaxed);
  return out;
}
}  // namespace

std::vector<std::uint64_t> PeerLoad::directory_ops() const {
  return copy(ops_.get(), ranks_);
}

std::vector<std::uint64_t> PeerLoad::bytes() const {
  return copy(bytes_.get(), ranks_);
}

}  // namespace larder
