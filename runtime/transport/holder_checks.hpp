// HolderChecks: before a one-sided get of a chunk on its holder's disk tier, the holder checks
// the chunk (Transport::set_serve_check), as it does before serving a piece as a message.
//
// A one-sided get (UCX's ucp_get_nbx, MPI_Get) is served without the holder's code running. When
// the chunk's pages are not in the holder's memory, the get has the kernel load them from the
// device, and from then on they are in the page cache: the holder's own node would read them as
// memory, unchecked (docs/architecture.md, "This job's own disk tier"). So the reader first asks
// the holder, in one message per holder for all of a batch's disk-tier chunks (the Messenger,
// channel kHolderCheck); the holder's progress thread runs its check on each and answers with one
// verdict a chunk (kHolderVerdict). A chunk that fails is not read: the get returns EBADMSG, as a
// refused piece does, and the reader takes the chunk from another holder or the PFS. The holder's
// check marks its node suspect, so its own ranks check what the check brought in. A chunk that
// passes is then read with the get (its pages now in memory). Memory-tier chunks are not asked
// about: memory is trusted (the boundary is the node).
//
// Costs one message round trip per holder and batch of disk-tier chunks, beside a read that the
// holder's device serves. A holder that does not answer within the timeout fails the chunks asked
// about (the reader reads the PFS); one the transport knows failed, at once.
#ifndef LARDER_RUNTIME_TRANSPORT_HOLDER_CHECKS_HPP_
#define LARDER_RUNTIME_TRANSPORT_HOLDER_CHECKS_HPP_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <unordered_map>

#include "runtime/transport/messenger.hpp"
#include "runtime/transport/transport.hpp"

namespace larder {

class HolderChecks {
 public:
  // Registers the handlers of kHolderCheck and kHolderVerdict on `messenger` (before any message
  // can arrive on them). `peer_failed(rank)`: true once the transport knows that rank is gone
  // (may be empty).
  HolderChecks(int rank, Messenger& messenger, std::chrono::milliseconds timeout,
               std::function<bool(int)> peer_failed = {});
  HolderChecks(const HolderChecks&) = delete;
  HolderChecks& operator=(const HolderChecks&) = delete;
  HolderChecks(HolderChecks&&) = delete;
  HolderChecks& operator=(HolderChecks&&) = delete;
  // Its handlers stay registered: the messenger must not run them after this is gone (the
  // transport destroys it after its progress has stopped).
  ~HolderChecks() = default;

  // Holder side: the check run on each chunk asked about (null: every chunk passes).
  void set_check(Transport::ServeCheck check);

  // Reader side: asks the holders of the ops that read a chunk on their disk tier
  // (disk_backed(), with a chunk and its hash) and whose out[i] is still ok. Sets out[i] to
  // EBADMSG for a chunk its holder found bad, to an error when the holder did not answer; leaves
  // the others. Blocks until every holder asked has answered, failed or timed out.
  void check(std::span<const Transport::GetOp> ops, std::span<Status> out);

  // Chunks this rank asked its holders about, and chunks it checked for others (tests).
  std::uint64_t asked() const noexcept { return asked_.load(std::memory_order_relaxed); }
  std::uint64_t answered() const noexcept { return answered_.load(std::memory_order_relaxed); }

 private:
  struct Request;
  void on_ask(int from, std::span<const std::byte> body);
  void on_verdict(int from, std::span<const std::byte> body);
  bool run_check(Tier tier, std::uint32_t segment, const Transport::ChunkOf& chunk);

  const int rank_;
  Messenger& messenger_;
  const std::chrono::milliseconds timeout_;
  const std::function<bool(int)> peer_failed_;
  std::shared_mutex check_mu_;   // shared: a check running; unique: setting the check
  Transport::ServeCheck check_;  // guarded by check_mu_
  std::mutex mu_;
  std::condition_variable answered_cv_;
  std::unordered_map<std::uint64_t, Request*> pending_;  // guarded by mu_
  std::uint64_t next_id_ = 1;                            // guarded by mu_
  std::atomic<std::uint64_t> asked_{0};
  std::atomic<std::uint64_t> answered_{0};
};

}  // namespace larder

#endif  // LARDER_RUNTIME_TRANSPORT_HOLDER_CHECKS_HPP_
