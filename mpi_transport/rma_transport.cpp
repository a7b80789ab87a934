#include "mpi_transport/rma_transport.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <thread>

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

Status RmaTransport::issue(const GetOp& op, std::vector<MPI_Request>& requests,
                           std::vector<int>& flush_segments_of) {
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
    if (op.tier == Tier::kFile) {
      // The dynamic window: a plain MPI_Get, completed by a flush of its owner after the batch
      // is issued (Open MPI 4.1's osc/ucx aborts in MPI_Rget on a dynamic window: an assertion
      // in UCX's rkey unpacking, produce_mpi_np2 about one run in five).
      if (Status s = from_mpi(MPI_Get(op.into.data() + done, static_cast<int>(n), MPI_BYTE,
                                      op.owner, disp, static_cast<int>(n), MPI_BYTE, win),
                              "MPI_Get");
          !s.ok()) {
        return s;
      }
      if (std::find(flush_segments_of.begin(), flush_segments_of.end(), op.owner) ==
          flush_segments_of.end()) {
        flush_segments_of.push_back(op.owner);
      }
      done += n;
      continue;
    }
    MPI_Request request = MPI_REQUEST_NULL;
    if (Status s = from_mpi(MPI_Rget(op.into.data() + done, static_cast<int>(n), MPI_BYTE, op.owner,
                                     disp, static_cast<int>(n), MPI_BYTE, win, &request),
                            "MPI_Rget");
        !s.ok()) {
      return s;  // the pieces already issued are still waited for
    }
    requests.push_back(request);
    done += n;
  }
  return {};
}

Status RmaTransport::get(const GetOp& op) {
  Status out;
  get_many(std::span(&op, 1), std::span(&out, 1));
  return out;
}

void RmaTransport::get_many(std::span<const GetOp> ops, std::span<Status> out) {
  // Every get is issued, then all are waited for: a batch of node copies costs one round trip,
  // not one each. The wait tests the requests and, when none has completed for a while, sleeps
  // a little between tests: MPI_Win_flush would spin on the CPU for the whole round trip, and
  // where the target's MPI must answer the get in software (no RDMA: the target's progress
  // thread polls), the spinning readers of a node take the cores that thread needs.
  std::vector<MPI_Request> requests;
  std::vector<std::size_t> of;  // the op of each request
  requests.reserve(ops.size());
  of.reserve(ops.size());
  std::vector<int> flush_segments_of;  // owners with gets on the dynamic window
  for (std::size_t i = 0; i < ops.size(); ++i) {
    out[i] = issue(ops[i], requests, flush_segments_of);
    of.resize(requests.size(), i);
  }
  for (int owner : flush_segments_of) {
    Status s = from_mpi(MPI_Win_flush(owner, segments_.get()), "MPI_Win_flush");
    if (s.ok()) continue;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].tier == Tier::kFile && ops[i].owner == owner && out[i].ok()) out[i] = s;
    }
  }
  std::vector<int> indices(requests.size());
  std::size_t left = requests.size();
  auto idle_since = std::chrono::steady_clock::now();
  while (left > 0) {
    int completed = 0;
    if (MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &completed, indices.data(),
                     MPI_STATUSES_IGNORE) != MPI_SUCCESS ||
        completed == MPI_UNDEFINED) {
      // MPI could not test them: each is waited for on its own, so each gets its own outcome.
      for (std::size_t r = 0; r < requests.size(); ++r) {
        if (requests[r] == MPI_REQUEST_NULL) continue;
        Status s = from_mpi(MPI_Wait(&requests[r], MPI_STATUS_IGNORE), "MPI_Wait");
        if (out[of[r]].ok() && !s.ok()) out[of[r]] = std::move(s);
      }
      return;
    }
    left -= static_cast<std::size_t>(completed);
    const auto now = std::chrono::steady_clock::now();
    if (completed > 0) {
      idle_since = now;
    } else if (now - idle_since > kSpin) {
      std::this_thread::sleep_for(kPause);  // pacing, not ordering: MPI_Testsome decides
    }
  }
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
