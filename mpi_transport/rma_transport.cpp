#include "mpi_transport/rma_transport.hpp"

#include <algorithm>
#include <climits>

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
  return t;
}

Status RmaTransport::get(int owner, Tier tier, std::uint64_t offset, std::span<std::byte> into) {
  MPI_Win win = windows_[static_cast<int>(tier)].get();
  constexpr std::size_t kMaxPiece = 1u << 30;  // MPI counts are int
  std::size_t done = 0;
  while (done < into.size()) {
    const std::size_t n = std::min(kMaxPiece, into.size() - done);
    if (Status s = from_mpi(
            MPI_Get(into.data() + done, static_cast<int>(n), MPI_BYTE, owner,
                    static_cast<MPI_Aint>(offset + done), static_cast<int>(n), MPI_BYTE, win),
            "MPI_Get");
        !s.ok()) {
      return s;
    }
    done += n;
  }
  return from_mpi(MPI_Win_flush(owner, win), "MPI_Win_flush");
}

Status RmaTransport::close() {
  Status first;
  for (Window& w : windows_) {
    Status s = w.close();
    if (first.ok()) first = s;
  }
  return first;
}

}  // namespace larder::mpi
