#include "mpi_transport/rma_transport.hpp"

#include <algorithm>
#include <climits>
#include <cstring>

#include "mpi_transport/mpi_status.hpp"

namespace larder::mpi {

Result<std::unique_ptr<RmaTransport>> RmaTransport::create(MPI_Comm comm, const LocalTiers& tiers) {
  std::unique_ptr<RmaTransport> t(new RmaTransport());
  for (Tier tier : {Tier::kMem, Tier::kDisk}) {
    const Arena* arena = tiers.get(tier);
    auto window = Window::expose(comm, arena != nullptr ? arena->data() : nullptr,
                                 arena != nullptr ? arena->capacity() : 0);
    if (!window.ok()) {
      (void)t->close();
      return window.status();
    }
    t->windows_[static_cast<int>(tier)] = std::move(*window);
  }
  auto segments = Window::dynamic(comm);
  if (!segments.ok()) {
    (void)t->close();
    return segments.status();
  }
  t->segments_ = std::move(*segments);
  return t;
}

Status RmaTransport::get(const GetOp& op) {
  MPI_Win win = MPI_WIN_NULL;
  MPI_Aint base = 0;
  if (op.tier == Tier::kFile) {
    std::lock_guard lock(segments_mu_);
    auto it = known_.find({op.owner, op.segment});
    if (it == known_.end()) return {Errc::kUnavailable, 0, "segment not learned"};
    if (op.offset + op.into.size() > it->second.second) {
      return {Errc::kInvalidArgument, ERANGE, "get beyond the end of the peer's segment"};
    }
    base = it->second.first;
    win = segments_.get();
  } else {
    win = windows_[static_cast<int>(op.tier)].get();
  }
  constexpr std::size_t kMaxPiece = 1u << 30;  // MPI counts are int
  std::size_t done = 0;
  while (done < op.into.size()) {
    const std::size_t n = std::min(kMaxPiece, op.into.size() - done);
    const MPI_Aint disp = base + static_cast<MPI_Aint>(op.offset + done);
    if (Status s = from_mpi(MPI_Get(op.into.data() + done, static_cast<int>(n), MPI_BYTE, op.owner,
                                    disp, static_cast<int>(n), MPI_BYTE, win),
                            "MPI_Get");
        !s.ok()) {
      return s;
    }
    done += n;
  }
  return from_mpi(MPI_Win_flush(op.owner, win), "MPI_Win_flush");
}

Result<std::vector<std::byte>> RmaTransport::expose(std::uint32_t /*segment*/,
                                                    std::span<std::byte> memory) {
  MPI_Aint address = 0;
  if (!memory.empty()) {
    std::lock_guard lock(segments_mu_);
    if (Status s = segments_.attach(memory.data(), memory.size()); !s.ok()) return s;
    if (Status s = from_mpi(MPI_Get_address(memory.data(), &address), "MPI_Get_address"); !s.ok()) {
      return s;
    }
  }
  const std::uint64_t size = memory.size();
  std::vector<std::byte> desc(sizeof address + sizeof size);
  std::memcpy(desc.data(), &address, sizeof address);
  std::memcpy(desc.data() + sizeof address, &size, sizeof size);
  return desc;
}

bool RmaTransport::knows(int owner, std::uint32_t segment) {
  std::lock_guard lock(segments_mu_);
  return known_.contains({owner, segment});
}

Status RmaTransport::learn(int owner, std::uint32_t segment,
                           std::span<const std::byte> descriptor) {
  MPI_Aint address = 0;
  std::uint64_t size = 0;
  if (descriptor.size() != sizeof address + sizeof size) {
    return {Errc::kInvalidArgument, EINVAL, "bad segment descriptor"};
  }
  std::memcpy(&address, descriptor.data(), sizeof address);
  std::memcpy(&size, descriptor.data() + sizeof address, sizeof size);
  std::lock_guard lock(segments_mu_);
  known_.emplace(std::make_pair(owner, segment), std::make_pair(address, size));
  return {};
}

Status RmaTransport::close() {
  Status first;
  for (Window& w : windows_) {
    Status s = w.close();
    if (first.ok()) first = s;
  }
  std::lock_guard lock(segments_mu_);
  if (Status s = segments_.close(); first.ok()) first = s;
  return first;
}

}  // namespace larder::mpi
