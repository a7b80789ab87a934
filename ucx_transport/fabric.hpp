// Fabric: this rank's UCX context and multi-threaded worker, with the arenas registered, and
// chunk reads with ucp_get_nbx straight from the owner's registered arena into the reader's
// buffer (or, where UCX does gets in software, as messages: message_reads.hpp). Worker
// addresses, arena addresses and remote keys are put in the host's address book at init (one
// copy per host, address_book.hpp); a peer is made from its record, and its endpoint created,
// on first use and cached: a rank holds state only for the peers it talks to. The worker has
// wake-up (the progress thread sleeps on its event fd) and endpoints report peer failures, so UCX
// chooses transports that can do both: TCP here, RDMA verbs on InfiniBand/RoCE clusters. Completion
// is driven by the calling thread for a short while, then by the progress thread.
//
// Failures (endpoint errors, a peer that stops answering within the timeout) mark the peer
// failed: that get and every later one from it return an error, and the read path falls back
// to the parallel file system. Why not shared-memory transports for same-host peers: see
// docs/transports.md (UCX 1.13 only serves gets from UCX-allocated memory over sysv/posix and
// never uses cma for RMA; and real node-local hits never touch UCX anyway).
#ifndef LARDER_UCX_TRANSPORT_FABRIC_HPP_
#define LARDER_UCX_TRANSPORT_FABRIC_HPP_

#include <mpi.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <unordered_map>
#include <vector>

#include "runtime/transport/holder_checks.hpp"
#include "ucx_transport/address_book.hpp"
#include "ucx_transport/context.hpp"
#include "ucx_transport/memory.hpp"
#include "ucx_transport/peer.hpp"
#include "ucx_transport/ucx_factory.hpp"

namespace larder {
class MessageShards;
}  // namespace larder

namespace larder::ucx {

// The state a request's completion callback shares with the thread waiting for it.
struct Completion {
  std::atomic<bool> done{false};  // release by the callback, acquire by the waiter
  ucs_status_t status = UCS_OK;   // written before done
  std::mutex mu;
  std::condition_variable cv;
};

// The completion callback for a Completion in `user_data` (ucp_send_nbx_callback_t).
void on_request_done(void* request, ucs_status_t status, void* user_data);

class Fabric final : public ClosableTransport {
 public:
  // Collective over `comm`.
  static Result<std::unique_ptr<Fabric>> create(MPI_Comm comm, const LocalTiers& tiers,
                                                const UcxOptions& options, std::size_t shard_bytes);
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;
  ~Fabric() override;

  const char* name() const noexcept override { return "ucx"; }
  Status get(const GetOp& op) override;
  void get_many(std::span<const GetOp> ops, std::span<Status> out) override;
  Result<std::vector<std::byte>> expose(std::uint32_t segment,
                                        std::span<std::byte> memory) override;
  bool knows(int owner, std::uint32_t segment) override;
  Status learn(int owner, std::uint32_t segment, std::span<const std::byte> descriptor) override;
  std::vector<ProgressSource> progress_sources() override;
  ShardOps* shards() noexcept override;
  Messenger* messenger() noexcept override;
  std::uint64_t messages_sent() const noexcept override;
  void begin_close() noexcept override { closing_.store(true, std::memory_order_release); }
  // Remote reads as messages run it before serving a chunk's piece; with gets, a holder runs it
  // on the disk-tier chunks a reader asks about before its gets (HolderChecks).
  void set_serve_check(const ServeCheck& check) override;
  Status close() override;

  // For the directory's shards and the messenger over this fabric (ucx_transport only):
  ucp_context_h context() const noexcept { return context_.get(); }
  ucp_worker_h worker() const noexcept { return worker_.get(); }
  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  // The connected peer, connecting on first use; null with a Status when it cannot be used.
  Result<Peer*> connected_peer(int rank);
  // True once the endpoint to `rank` has failed (a peer error, a timed-out get).
  bool peer_failed(int rank);
  // Treats `rank` as failed from now on (it did not answer): its endpoint is closed.
  void give_up(int rank);
  // True when the directory's operations travel as messages (MessageShards), not UCX RMA.
  bool directory_as_messages() const noexcept { return message_shards_ != nullptr; }
  // True when chunks are read from other ranks as messages (MessageReads), not UCX gets.
  bool reads_as_messages() const noexcept { return message_reads_ != nullptr; }
  // Bytes hashed as they arrived, for gets that wanted their hash (GetOp::hashed; tests).
  std::uint64_t bytes_hashed() const noexcept;
  std::chrono::milliseconds timeout() const noexcept { return options_.timeout; }
  // Waits for `request` (issued with `completion` as its user data) and frees it: the calling
  // thread progresses the worker for a while, then the progress thread completes it. A request
  // that takes longer than the timeout fails the peer.
  Status wait(void* request, Completion& completion, Peer& peer);
  // Endpoints of `peer` use this shared lock while issuing (force-close takes it exclusively).
  std::shared_mutex& peers_mutex() noexcept { return peers_mu_; }
  // What this rank holds of its peers: the peers it made (per peer: its record's copy, keys) and
  // its share of the address books' mappings; and what start-up moved through MPI collectives.
  struct PeerState {
    std::size_t peers = 0;       // peers made (contacted)
    std::size_t peer_bytes = 0;  // their records' bytes held privately
    std::size_t book_bytes = 0;  // the address books' mappings (shared by the host's ranks)
    BookTraffic startup;         // building the books, this rank's part
  };
  PeerState peer_state();
  const UcxOptions& options() const noexcept { return options_; }
  // UcxShards adds what building its book moved.
  void count_startup(const BookTraffic& t) noexcept;

 private:
  explicit Fabric(UcxOptions options);
  Status exchange(MPI_Comm comm, const LocalTiers& tiers);
  // Connects to a worker that no longer exists (fault injection for tests).
  Result<std::vector<std::byte>> dead_worker_address();
  void fail_peer(Peer& peer) noexcept;
  // The peer of `rank`, made from its record on first use; null when the record is unusable.
  // Under peers_mu_, unique.
  Peer* peer_locked(int rank);
  // The peer of `rank` if it was made; null otherwise. Under peers_mu_ (either mode).
  Peer* find_peer(int rank) const noexcept;
  // Issues one get (`*request` null when it completed at once, or when it failed).
  Status issue_get(const GetOp& op, Completion& c, Peer** peer, void** request);

  // Declaration order is teardown order, reversed: peers (rkeys, endpoints) go first, then the
  // registrations, then the worker, then the context.
  const UcxOptions options_;
  int rank_ = 0;
  int size_ = 0;
  ContextPtr context_;
  WorkerPtr worker_;
  int event_fd_ = -1;
  std::vector<Registration> registrations_;
  std::mutex segments_mu_;
  std::vector<Registration> segment_registrations_;  // guarded by segments_mu_
  AddressBook book_;  // every rank's worker address, arenas and keys (host-shared)
  BookTraffic startup_;
  std::shared_mutex peers_mu_;  // unique: make, connect and force-close; shared: issue gets
  std::unordered_map<int, std::unique_ptr<Peer>> peers_;  // the peers contacted, by rank
  // Made after the endpoints' information, released before the endpoints (close()).
  std::unique_ptr<class UcxShards> shards_;
  std::unique_ptr<class UcxMessenger> messenger_;
  std::unique_ptr<MessageShards> message_shards_;      // instead of shards_ (LARDER_DIRECTORY_OPS)
  std::unique_ptr<class MessageReads> message_reads_;  // instead of gets (LARDER_REMOTE_READS)
  std::unique_ptr<HolderChecks> holder_checks_;        // with gets: holders check disk-tier chunks
  bool closed_ = false;
  std::atomic<bool> closing_{false};            // release/acquire: read by endpoint error handlers
  std::atomic<std::uint64_t> bytes_hashed_{0};  // by gets (message reads count their own)
};

}  // namespace larder::ucx

#endif  // LARDER_UCX_TRANSPORT_FABRIC_HPP_
