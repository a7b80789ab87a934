// UcxShards: the directory's shards in UCX remote memory (ShardOps over Larder's own fabric).
//
// Each rank's shard is memory UCX allocates and registers (ucp_mem_map with ALLOCATE), zeroed,
// its address and packed remote key exchanged once at init. Atomic words are UCX atomics
// (compare-and-swap, fetch-add, swap), bytes ucp_get_nbx / ucp_put_nbx, a flush waits for this
// thread's requests and, after puts, flushes the endpoint (remote completion). Served by the
// target's UCX worker, which Larder's progress thread sleeps on (its event fd): a lookup of an
// idle rank costs a network round trip, not a polling interval, and no MPI call is made after
// start-up.
#ifndef LARDER_UCX_TRANSPORT_UCX_SHARDS_HPP_
#define LARDER_UCX_TRANSPORT_UCX_SHARDS_HPP_

#include <mpi.h>
#include <ucp/api/ucp.h>

#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/directory/shard_ops.hpp"
#include "ucx_transport/fabric.hpp"

namespace larder::ucx {

class UcxShards final : public ShardOps {
 public:
  // Collective over `comm`: `bytes` zeroed bytes per rank, their addresses and keys in the
  // host's address book (address_book.hpp).
  static Result<std::unique_ptr<UcxShards>> create(MPI_Comm comm, Fabric& fabric,
                                                   std::size_t bytes);
  UcxShards(const UcxShards&) = delete;
  UcxShards& operator=(const UcxShards&) = delete;
  ~UcxShards() override;

  int rank() const noexcept override { return fabric_.rank(); }
  int size() const noexcept override { return fabric_.size(); }
  Status compare_and_swap(int target, std::uint64_t disp, const std::uint64_t* desired,
                          const std::uint64_t* expected, std::uint64_t* old) override;
  Status fetch_add(int target, std::uint64_t disp, const std::uint64_t* add,
                   std::uint64_t* old) override;
  Status store(int target, std::uint64_t disp, const std::uint64_t* value) override;
  Status get(int target, std::uint64_t disp, void* into, std::size_t bytes) override;
  Status put(int target, std::uint64_t disp, const void* from, std::size_t bytes) override;
  Status flush(int target) override;
  Status flush_all() override;

  // Releases the remote keys and the shard (before the fabric closes its endpoints).
  void close() noexcept;
  // The shards' address book's mapping (shared by the host's ranks).
  std::size_t book_bytes() const noexcept { return book_.mapped_bytes(); }

 private:
  explicit UcxShards(Fabric& fabric) : fabric_(fabric) {}
  struct Remote {
    std::uint64_t base = 0;
    ucp_rkey_h rkey = nullptr;
  };
  // The peer, its shard's address and key, connecting and unpacking (from the book's record) on
  // first use.
  Status target(int rank, Peer** peer, Remote* remote);
  // A get (into `buffer`) or a put (from it) of `bytes` bytes at `disp` in rank's shard.
  Status issue_rma(int rank, std::uint64_t disp, void* buffer, std::size_t bytes, bool is_put);
  Status issue_atomic(int rank, ucp_atomic_op_t op, std::uint64_t disp, const std::uint64_t* arg,
                      std::uint64_t* reply);
  Status track(ucs_status_ptr_t request, std::unique_ptr<Completion> c, Peer* peer, int rank,
               bool is_put);
  Status complete(int rank, bool all);

  Fabric& fabric_;
  ucp_mem_h memh_ = nullptr;
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
  AddressBook book_;  // every rank's shard address and packed key (host-shared)
  std::mutex mu_;
  std::unordered_map<int, Remote> remotes_;  // the shards used, by rank; guarded by mu_
};

}  // namespace larder::ucx

#endif  // LARDER_UCX_TRANSPORT_UCX_SHARDS_HPP_
