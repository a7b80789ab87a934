#include "mpi_transport/rma_transport.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>
#include <thread>

#include "mpi_transport/mpi_status.hpp"
#include "runtime/common/content_hash.hpp"

namespace larder::mpi {

Result<std::unique_ptr<RmaTransport>> RmaTransport::create(MPI_Comm comm, const LocalTiers& tiers,
                                                           Messenger* messenger,
                                                           std::chrono::milliseconds timeout) {
  std::unique_ptr<RmaTransport> t(new RmaTransport());
  t->messenger_ = messenger;
  if (messenger != nullptr) {
    // Before the windows' collective creation: no rank asks before every rank can answer.
    int rank = 0;
    if (Status s = from_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank"); !s.ok()) return s;
    t->holder_checks_ = std::make_unique<HolderChecks>(rank, *messenger, timeout);
  }
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

Status RmaTransport::issue(const GetOp& op, std::size_t piece, std::vector<MPI_Request>& requests,
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
  constexpr std::size_t kMaxCount = 1u << 30;  // MPI counts are int
  piece = std::min(piece, kMaxCount);
  std::size_t done = 0;
  while (done < op.into.size()) {
    const std::size_t n = std::min(piece, op.into.size() - done);
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

void RmaTransport::set_serve_check(const ServeCheck& check) {
  if (holder_checks_) holder_checks_->set_check(check);
}

void RmaTransport::get_many(std::span<const GetOp> ops, std::span<Status> out) {
  // Every get is issued, then all are waited for: a batch of node copies costs one round trip,
  // not one each. The wait tests the requests and, when none has completed for a while, sleeps
  // a little between tests: MPI_Win_flush would spin on the CPU for the whole round trip, and
  // where the target's MPI must answer the get in software (no RDMA: the target's progress
  // thread polls), the spinning readers of a node take the cores that thread needs.
  // A get from a tier's window is issued in pieces (piece_of), whether or not its hash is wanted
  // (GetOp::hashed), so that checking costs only the hash: each piece is hashed as soon as it and
  // the pieces before it have arrived, while later ones are in flight. Gets from node files'
  // segments are whole (the caller hashes them).
  std::vector<MPI_Request> requests;
  std::vector<std::size_t> of;                        // the op of each request
  std::vector<std::size_t> first(ops.size() + 1, 0);  // ops[i]'s requests: [first[i], first[i+1])
  requests.reserve(ops.size());
  of.reserve(ops.size());
  std::vector<int> flush_segments_of;  // owners with gets on the dynamic window
  // Disk-tier chunks are checked by their holders first; a chunk refused is not read.
  for (Status& s : out) s = Status();
  if (holder_checks_) holder_checks_->check(ops, out);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    first[i] = requests.size();
    if (!out[i].ok()) continue;
    if (messenger_ != nullptr) messenger_->wake(ops[i].owner);
    const bool pieces = ops[i].tier != Tier::kFile;
    out[i] = issue(ops[i], pieces ? piece_of(ops[i].into.size()) : ops[i].into.size(), requests,
                   flush_segments_of);
    of.resize(requests.size(), i);
  }
  first[ops.size()] = requests.size();
  for (int owner : flush_segments_of) {
    Status s = from_mpi(MPI_Win_flush(owner, segments_.get()), "MPI_Win_flush");
    if (s.ok()) continue;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].tier == Tier::kFile && ops[i].owner == owner && out[i].ok()) out[i] = s;
    }
  }
  // The hashes: of each op whose pieces were all issued, its pieces in order as they arrive.
  struct Hashing {
    ContentHasher hasher;
    std::size_t next = 0;  // the next request (piece) to hash
    std::uint64_t ns = 0;
  };
  std::vector<std::optional<Hashing>> hashing(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].hashed == nullptr) continue;
    *ops[i].hashed = Hashed{};  // 0: the caller hashes (a segment, a failure, no memory)
    if (ops[i].tier != Tier::kFile && out[i].ok() && first[i] < first[i + 1]) {
      hashing[i].emplace();
      hashing[i]->next = first[i];
      if (!hashing[i]->hasher.valid()) hashing[i].reset();
    }
  }
  const auto hash_arrived = [&](std::size_t i) {
    Hashing& h = *hashing[i];
    const std::uint64_t piece = piece_of(ops[i].into.size());
    const auto t0 = std::chrono::steady_clock::now();
    while (h.next < first[i + 1] && requests[h.next] == MPI_REQUEST_NULL) {
      const std::uint64_t at = (h.next - first[i]) * piece;  // request k of op i is piece k
      h.hasher.update(
          ops[i].into.subspan(at, std::min<std::uint64_t>(piece, ops[i].into.size() - at)));
      ++h.next;
    }
    h.ns += static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
            .count());
    if (h.next == first[i + 1]) {
      *ops[i].hashed = Hashed{h.hasher.digest(), h.ns};
      bytes_hashed_.fetch_add(ops[i].into.size(), std::memory_order_relaxed);
      hashing[i].reset();
    }
  };
  std::vector<int> indices(requests.size());
  std::size_t left = requests.size();
  auto idle_since = std::chrono::steady_clock::now();
  while (left > 0) {
    int completed = 0;
    if (MPI_Testsome(static_cast<int>(requests.size()), requests.data(), &completed, indices.data(),
                     MPI_STATUSES_IGNORE) != MPI_SUCCESS ||
        completed == MPI_UNDEFINED) {
      // MPI could not test them: each is waited for on its own, so each gets its own outcome
      // (and the caller hashes what it wanted hashed).
      for (std::size_t r = 0; r < requests.size(); ++r) {
        if (requests[r] == MPI_REQUEST_NULL) continue;
        Status s = from_mpi(MPI_Wait(&requests[r], MPI_STATUS_IGNORE), "MPI_Wait");
        if (out[of[r]].ok() && !s.ok()) out[of[r]] = std::move(s);
      }
      for (std::size_t i = 0; i < ops.size(); ++i) {
        if (hashing[i]) *ops[i].hashed = Hashed{};
      }
      return;
    }
    left -= static_cast<std::size_t>(completed);
    // Other ranks' requests to this one are answered meanwhile (the progress thread leaves the
    // polling to waiting threads).
    if (completed == 0 && messenger_ != nullptr) (void)messenger_->poll_waiting();
    for (int k = 0; k < completed; ++k) {
      const std::size_t i = of[static_cast<std::size_t>(indices[static_cast<std::size_t>(k)])];
      if (hashing[i]) hash_arrived(i);
    }
    const auto now = std::chrono::steady_clock::now();
    if (completed > 0) {
      idle_since = now;
    } else if (now - idle_since > kYield) {
      std::this_thread::sleep_for(kPause);  // pacing, not ordering: MPI_Testsome decides
    } else if (now - idle_since > kSpin) {
      std::this_thread::yield();  // the core to whoever else wants it (another rank's MPI)
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
