// MessageShards: the directory's shards served by their home's progress thread (ShardOps over a
// Messenger), for fabrics whose one-sided atomics are software anyway (UCX over TCP, and fabrics
// UCX drives without RDMA).
//
// There, each remote atomic or get is a message to the home and a reply, served one by one by
// the home's UCX worker: a lookup of a key costs two or three round trips' worth of messages, a
// phase of list-ahead over a hundred keys some two hundred. Here a thread's operations are queued
// per home and a flush sends them as one message per home (split at kMaxMessage); the home's
// progress thread applies them in order to its shard (C++ atomics on 8-byte words) and answers
// with one message. Operations on this rank's own shard are applied at the flush, without a
// message. The semantics are ShardOps's: values and writes are complete once flush() returns OK.
//
// Failures: a home that does not answer within the timeout, or that the transport reports failed
// (`peer_failed`, checked every 10 ms while waiting), fails the flush; its operations may or may
// not have been applied, as with an RMA flush that fails. A home that timed out is given up
// (`give_up`): the transport fails it, and later operations to it fail at once. A reply that
// comes after its flush gave up is dropped. Malformed requests are refused whole (EINVAL).
// Unlike an RMA reply, which returns on the requester's own connection, the reply is a message
// from the home: a home that can receive from a rank but not send to it (a one-way fault) costs
// that rank one timeout, then is given up.
#ifndef LARDER_RUNTIME_DIRECTORY_MESSAGE_SHARDS_HPP_
#define LARDER_RUNTIME_DIRECTORY_MESSAGE_SHARDS_HPP_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include "runtime/directory/shard_ops.hpp"
#include "runtime/transport/messenger.hpp"

namespace larder {

class MessageShards final : public ShardOps {
 public:
  // `bytes` zeroed bytes of shard for this rank (a multiple of 8). Registers the handlers of
  // kShardRequest and kShardReply on `messenger` (before any message can arrive on them).
  // `peer_failed(rank)`: true once the transport knows that rank is gone; `give_up(rank)`: that
  // rank did not answer within `timeout`, the transport treats it as failed from now on (so later
  // operations fail at once instead of waiting again). Either may be empty.
  MessageShards(int rank, int size, std::size_t bytes, Messenger& messenger,
                std::chrono::milliseconds timeout, std::function<bool(int)> peer_failed,
                std::function<void(int)> give_up = {});
  MessageShards(const MessageShards&) = delete;
  MessageShards& operator=(const MessageShards&) = delete;
  ~MessageShards() override;

  int rank() const noexcept override { return rank_; }
  int size() const noexcept override { return size_; }
  Status compare_and_swap(int target, std::uint64_t disp, const std::uint64_t* desired,
                          const std::uint64_t* expected, std::uint64_t* old) override;
  Status fetch_add(int target, std::uint64_t disp, const std::uint64_t* add,
                   std::uint64_t* old) override;
  Status store(int target, std::uint64_t disp, const std::uint64_t* value) override;
  Status get(int target, std::uint64_t disp, void* into, std::size_t bytes) override;
  Status put(int target, std::uint64_t disp, const void* from, std::size_t bytes) override;
  Status flush(int target) override;
  Status flush_all() override;

  // Messages sent and operations they carried (for tests and the docs' figures).
  std::uint64_t requests_sent() const noexcept;
  std::uint64_t operations_sent() const noexcept;

  enum class Kind : std::uint8_t { kCas = 1, kFetchAdd = 2, kSwap = 3, kGet = 4, kPut = 5 };
  struct Op {
    Kind kind = Kind::kGet;
    int target = -1;
    std::uint64_t disp = 0;
    std::uint64_t a = 0;       // CAS: desired; fetch-add: the addend; swap: the value
    std::uint64_t b = 0;       // CAS: expected
    void* out = nullptr;       // CAS, fetch-add: the old word; get: the bytes
    const void* in = nullptr;  // put: the bytes
    std::size_t bytes = 0;     // get, put
  };

 private:
  struct Request;
  Status queue(Op op);
  Status complete(int target, bool all);
  // Applies ops to this rank's shard; false (nothing applied) if one is out of bounds.
  bool apply(std::span<const Op> ops) noexcept;
  void on_request(int from, std::span<const std::byte> body);
  void on_reply(int from, std::span<const std::byte> body);

  const int rank_;
  const int size_;
  // The shard: anonymous zero pages, resident only where written (a vector's zero fill would make
  // all of it resident at once: 9 MiB per rank at the default LARDER_DIR_SLOTS); accessed through
  // std::atomic_ref only. Empty if the mapping failed (every operation is then refused).
  struct Shard {
    explicit Shard(std::size_t bytes);
    Shard(const Shard&) = delete;
    Shard& operator=(const Shard&) = delete;
    ~Shard();
    std::uint64_t* words = nullptr;
    std::size_t bytes = 0;
  };
  Shard shard_;
  Messenger& messenger_;
  const std::chrono::milliseconds timeout_;
  const std::function<bool(int)> peer_failed_;
  const std::function<void(int)> give_up_;

  std::mutex queued_mu_;  // a leaf
  std::unordered_map<std::thread::id, std::vector<Op>> queued_;

  mutable std::mutex mu_;  // pending_ and the requests it points to; a leaf (no send under it)
  std::condition_variable answered_;
  std::unordered_map<std::uint64_t, Request*> pending_;
  std::uint64_t next_id_ = 1;
  std::uint64_t requests_sent_ = 0;
  std::uint64_t operations_sent_ = 0;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_DIRECTORY_MESSAGE_SHARDS_HPP_
