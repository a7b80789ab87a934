#include "mpi_transport/window_directory.hpp"

#include <cerrno>
#include <thread>

#include "mpi_transport/mpi_status.hpp"
#include "runtime/common/log.hpp"

namespace larder::mpi {
namespace {

constexpr std::uint64_t kStateEmpty = 0;  // claimed (key set) but not yet final: loading
constexpr std::uint64_t kStateReady = 2;
constexpr std::uint64_t kStateFailed = 3;
constexpr MPI_Aint kKeyWord = 0;
constexpr MPI_Aint kStateWord = 8;
constexpr MPI_Aint kCheckWord = 16;
constexpr MPI_Aint kPayloadOffset = 24;

std::uint64_t state_of(std::uint64_t word) noexcept {
  return word & 0xff;
}

}  // namespace

WindowDirectory::WindowDirectory(MPI_Comm comm, Window window, std::uint32_t slots)
    : comm_(comm), window_(std::move(window)), slots_(slots) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

WindowDirectory::~WindowDirectory() = default;

Result<std::unique_ptr<WindowDirectory>> WindowDirectory::create(MPI_Comm comm,
                                                                 std::uint32_t slots) {
  auto window = Window::allocate(comm, static_cast<std::size_t>(slots) * kSlotBytes);
  if (!window.ok()) return window.status();
  return std::unique_ptr<WindowDirectory>(new WindowDirectory(comm, std::move(*window), slots));
}

int WindowDirectory::home_of(const Key& key) const noexcept {
  return static_cast<int>(key.word % static_cast<std::uint64_t>(size_));
}

Result<bool> WindowDirectory::read_final(const Where& where, const Key& key, Claim* claim) {
  MPI_Win win = window_.get();
  const MPI_Aint base = slot_disp(where.slot);
  std::uint64_t state = 0;
  std::uint64_t dummy = 0;
  if (Status s = from_mpi(MPI_Fetch_and_op(&dummy, &state, MPI_UINT64_T, where.home,
                                           base + kStateWord, MPI_NO_OP, win),
                          "MPI_Fetch_and_op");
      !s.ok()) {
    return s;
  }
  if (Status s = from_mpi(MPI_Win_flush(where.home, win), "MPI_Win_flush"); !s.ok()) return s;
  if (state_of(state) == kStateEmpty) return false;  // still loading
  // Final: the check word and payload were flushed before the state was set.
  std::uint64_t buf[1 + kPayloadSize / 8];
  if (Status s = from_mpi(MPI_Get(buf, sizeof buf, MPI_BYTE, where.home, base + kCheckWord,
                                  sizeof buf, MPI_BYTE, win),
                          "MPI_Get");
      !s.ok()) {
    return s;
  }
  if (Status s = from_mpi(MPI_Win_flush(where.home, win), "MPI_Win_flush"); !s.ok()) return s;
  if (buf[0] != key.check) {
    claim->outcome = Claim::Outcome::kLoading;  // marker: another key with the same word
    return Status(Errc::kNotFound, 0, "slot holds another key");
  }
  claim->outcome =
      state_of(state) == kStateReady ? Claim::Outcome::kReady : Claim::Outcome::kFailed;
  std::memcpy(claim->payload.data(), buf + 1, kPayloadSize);
  return true;
}

Result<Claim> WindowDirectory::acquire(const Key& key) {
  MPI_Win win = window_.get();
  const int home = home_of(key);
  const auto start =
      static_cast<std::uint32_t>((key.word / static_cast<std::uint64_t>(size_)) % slots_);
  for (int probe = 0; probe < kMaxProbe; ++probe) {
    const Where where{
        home, static_cast<std::uint32_t>((start + static_cast<std::uint32_t>(probe)) % slots_)};
    std::uint64_t empty = 0;
    std::uint64_t old = 0;
    std::uint64_t word = key.word;
    if (Status s = from_mpi(MPI_Compare_and_swap(&word, &empty, &old, MPI_UINT64_T, home,
                                                 slot_disp(where.slot) + kKeyWord, win),
                            "MPI_Compare_and_swap");
        !s.ok()) {
      return s;
    }
    if (Status s = from_mpi(MPI_Win_flush(home, win), "MPI_Win_flush"); !s.ok()) return s;
    if (old == 0) {
      std::lock_guard lock(claims_mu_);
      claims_[key] = where;
      return Claim{Claim::Outcome::kClaimed, {}};
    }
    if (old != key.word) continue;
    Claim claim;
    auto final = read_final(where, key, &claim);
    if (!final.ok()) {
      if (final.status().code() == Errc::kNotFound) continue;  // same word, other key
      return final.status();
    }
    if (!*final) return Claim{Claim::Outcome::kLoading, {}};
    return claim;
  }
  return Status(Errc::kNoSpace, ENOSPC,
                "directory shard of rank " + std::to_string(home) + " is full");
}

Result<Claim> WindowDirectory::wait(const Key& key, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(20);
  for (;;) {
    auto claim = acquire(key);
    if (!claim.ok()) return claim;
    if (claim->outcome != Claim::Outcome::kLoading) return claim;
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status(Errc::kTimeout, ETIMEDOUT,
                    "timed out waiting for another rank to load an entry");
    }
    std::this_thread::sleep_for(pause);  // back off: never spin a core while another rank loads
    pause = std::min(pause * 2, std::chrono::microseconds(5000));
  }
}

Status WindowDirectory::finish(const Key& key, std::uint64_t state, const Payload& payload) {
  Where where{};
  {
    std::lock_guard lock(claims_mu_);
    auto it = claims_.find(key);
    if (it == claims_.end())
      return Status(Errc::kInternal, EINVAL, "finishing an entry this rank did not claim");
    where = it->second;
    claims_.erase(it);
  }
  MPI_Win win = window_.get();
  const MPI_Aint base = slot_disp(where.slot);
  std::uint64_t buf[1 + kPayloadSize / 8];
  buf[0] = key.check;
  std::memcpy(buf + 1, payload.data(), kPayloadSize);
  if (Status s = from_mpi(MPI_Put(buf, sizeof buf, MPI_BYTE, where.home, base + kCheckWord,
                                  sizeof buf, MPI_BYTE, win),
                          "MPI_Put");
      !s.ok()) {
    return s;
  }
  if (Status s = from_mpi(MPI_Win_flush(where.home, win), "MPI_Win_flush"); !s.ok()) return s;
  const std::uint64_t word = state | (static_cast<std::uint64_t>(rank_) << 8);
  if (Status s = from_mpi(MPI_Accumulate(&word, 1, MPI_UINT64_T, where.home, base + kStateWord, 1,
                                         MPI_UINT64_T, MPI_REPLACE, win),
                          "MPI_Accumulate");
      !s.ok()) {
    return s;
  }
  return from_mpi(MPI_Win_flush(where.home, win), "MPI_Win_flush");
}

Status WindowDirectory::publish(const Key& key, const Payload& payload) {
  return finish(key, kStateReady, payload);
}

Status WindowDirectory::abandon(const Key& key) {
  return finish(key, kStateFailed, Payload{});
}

Status WindowDirectory::close() {
  return window_.close();
}

}  // namespace larder::mpi
