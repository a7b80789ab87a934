#include "ucx_transport/ucx_shards.hpp"

#include <pthread.h>

#include <algorithm>
#include <cstring>

#include "runtime/common/log.hpp"
#include "ucx_transport/ucx_status.hpp"

namespace larder::ucx {
namespace {

// This thread's requests not yet completed (ShardOps: a thread flushes its own operations).
struct Outstanding {
  const UcxShards* owner = nullptr;
  int rank = -1;
  void* request = nullptr;  // null: completed at once
  std::unique_ptr<Completion> completion;
  Peer* peer = nullptr;
  bool is_put = false;
};
using OutstandingList = std::vector<Outstanding>;

// The list is reached through a trivially destructible thread_local and freed at thread exit by
// a pthread key: a thread_local with a destructor registers it on first use under the dynamic
// loader's lock, and the agent's loader thread (runtime/agent) must run while a dlopen in
// another thread holds that lock.
pthread_key_t outstanding_key() {
  static const pthread_key_t key = [] {
    pthread_key_t k{};
    if (pthread_key_create(&k, [](void* p) { delete static_cast<OutstandingList*>(p); }) != 0) {
      LARDER_LOG_WARN("no thread-exit cleanup of UCX directory requests (pthread_key_create)");
      return static_cast<pthread_key_t>(-1);
    }
    return k;
  }();
  return key;
}

thread_local OutstandingList* t_list = nullptr;

OutstandingList& outstanding() {
  if (t_list == nullptr) {
    t_list = new OutstandingList();
    const pthread_key_t key = outstanding_key();
    if (key != static_cast<pthread_key_t>(-1)) pthread_setspecific(key, t_list);
  }
  return *t_list;
}

}  // namespace

Result<std::unique_ptr<UcxShards>> UcxShards::create(MPI_Comm comm, Fabric& fabric,
                                                     std::size_t bytes) {
  std::unique_ptr<UcxShards> s(new UcxShards(fabric));
  // A rank whose UCX failed still takes part in the exchange below (nobody waits for it).
  Status local = fabric.context() != nullptr && bytes > 0
                     ? Status()
                     : Status(Errc::kTransport, 0, "no ucx context for the directory shard");
  std::vector<std::byte> packed;
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  params.length = bytes;
  params.flags = UCP_MEM_MAP_ALLOCATE;
  if (local.ok()) {
    local = from_ucs(ucp_mem_map(fabric.context(), &params, &s->memh_), "ucp_mem_map");
  }
  if (local.ok()) {
    ucp_mem_attr_t attr{};
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
    local = from_ucs(ucp_mem_query(s->memh_, &attr), "ucp_mem_query");
    if (local.ok()) {
      s->base_ = attr.address;
      s->bytes_ = attr.length;
      std::memset(s->base_, 0, s->bytes_);
    }
  }
  if (local.ok()) {
    void* buffer = nullptr;
    std::size_t size = 0;
    local = from_ucs(ucp_rkey_pack(fabric.context(), s->memh_, &buffer, &size), "ucp_rkey_pack");
    if (local.ok()) {
      packed.assign(static_cast<std::byte*>(buffer), static_cast<std::byte*>(buffer) + size);
      ucp_rkey_buffer_release(buffer);
    }
  }
  // Every rank takes part in the exchange, so nobody hangs; the caller agrees on the outcome.
  const auto base = reinterpret_cast<std::uint64_t>(s->base_);
  std::vector<std::byte> mine(sizeof base);
  std::memcpy(mine.data(), &base, sizeof base);
  mine.insert(mine.end(), packed.begin(), packed.end());
  BookTraffic traffic;
  auto book = AddressBook::create(comm, mine, fabric.options().book_dir, &traffic);
  fabric.count_startup(traffic);
  if (book.ok()) {
    s->book_ = std::move(*book);
  } else if (local.ok()) {
    local = book.status();
  }
  if (!local.ok()) {
    s->close();
    return local;
  }
  return s;
}

UcxShards::~UcxShards() {
  close();
}

void UcxShards::close() noexcept {
  std::lock_guard lock(mu_);
  for (auto& [rank, r] : remotes_) {
    if (r.rkey != nullptr) ucp_rkey_destroy(r.rkey);
    r.rkey = nullptr;
  }
  remotes_.clear();
  if (memh_ != nullptr) {
    if (Status s = from_ucs(ucp_mem_unmap(fabric_.context(), memh_), "ucp_mem_unmap"); !s.ok()) {
      LARDER_LOG_WARN("{}", s.message());
    }
    memh_ = nullptr;
  }
}

Status UcxShards::target(int rank, Peer** peer, Remote* remote) {
  if (rank < 0 || rank >= fabric_.size()) return {Errc::kInvalidArgument, EINVAL, "no such rank"};
  auto p = fabric_.connected_peer(rank);
  if (!p.ok()) return p.status();
  std::lock_guard lock(mu_);
  auto it = remotes_.find(rank);
  if (it == remotes_.end()) {
    // The record: the shard's base address (8 bytes), then its packed key.
    const std::span<const std::byte> record = book_.record(rank);
    if (record.size() <= sizeof(std::uint64_t)) {
      return {Errc::kTransport, 0, "the rank has no directory shard"};
    }
    Remote r;
    std::memcpy(&r.base, record.data(), sizeof r.base);
    if (Status s =
            from_ucs(ucp_ep_rkey_unpack((*p)->endpoint(), record.data() + sizeof r.base, &r.rkey),
                     "ucp_ep_rkey_unpack");
        !s.ok()) {
      return s;
    }
    it = remotes_.emplace(rank, r).first;
  }
  *peer = *p;
  *remote = it->second;
  return {};
}

Status UcxShards::track(ucs_status_ptr_t request, std::unique_ptr<Completion> c, Peer* peer,
                        int rank, bool is_put) {
  if (UCS_PTR_IS_ERR(request)) {
    peer->mark_failed();
    return from_ucs(UCS_PTR_STATUS(request), "ucx directory operation");
  }
  Outstanding o;
  o.owner = this;
  o.rank = rank;
  o.request = request;  // null: done already
  o.completion = std::move(c);
  o.peer = peer;
  o.is_put = is_put;
  outstanding().push_back(std::move(o));
  return {};
}

Status UcxShards::issue_atomic(int rank, ucp_atomic_op_t op, std::uint64_t disp,
                               const std::uint64_t* arg, std::uint64_t* reply) {
  Peer* peer = nullptr;
  Remote shard;
  if (Status s = target(rank, &peer, &shard); !s.ok()) return s;
  auto c = std::make_unique<Completion>();
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                       UCP_OP_ATTR_FIELD_DATATYPE | UCP_OP_ATTR_FIELD_REPLY_BUFFER;
  param.cb.send = &on_request_done;
  param.user_data = c.get();
  param.datatype = ucp_dt_make_contig(8);
  param.reply_buffer = reply;
  std::shared_lock lock(fabric_.peers_mutex());
  if (peer->failed()) return {Errc::kTransport, 0, "ucx peer has failed"};
  ucs_status_ptr_t req =
      ucp_atomic_op_nbx(peer->endpoint(), op, arg, 1, shard.base + disp, shard.rkey, &param);
  return track(req, std::move(c), peer, rank, false);
}

Status UcxShards::compare_and_swap(int rank, std::uint64_t disp, const std::uint64_t* desired,
                                   const std::uint64_t* expected, std::uint64_t* old) {
  // UCX's conditional swap: the operand is the compare value, the reply buffer holds the new
  // value going out and the old one coming back.
  *old = *desired;
  return issue_atomic(rank, UCP_ATOMIC_OP_CSWAP, disp, expected, old);
}

Status UcxShards::fetch_add(int rank, std::uint64_t disp, const std::uint64_t* add,
                            std::uint64_t* old) {
  return issue_atomic(rank, UCP_ATOMIC_OP_ADD, disp, add, old);
}

Status UcxShards::store(int rank, std::uint64_t disp, const std::uint64_t* value) {
  // A swap whose old value nobody reads: atomic, and completed only once the target has it.
  thread_local std::uint64_t discard = 0;
  return issue_atomic(rank, UCP_ATOMIC_OP_SWAP, disp, value, &discard);
}

Status UcxShards::get(int rank, std::uint64_t disp, void* into, std::size_t bytes) {
  return issue_rma(rank, disp, into, bytes, false);
}

Status UcxShards::put(int rank, std::uint64_t disp, const void* from, std::size_t bytes) {
  return issue_rma(rank, disp, const_cast<void*>(from), bytes, true);
}

Status UcxShards::issue_rma(int rank, std::uint64_t disp, void* buffer, std::size_t bytes,
                            bool is_put) {
  Peer* peer = nullptr;
  Remote shard;
  if (Status s = target(rank, &peer, &shard); !s.ok()) return s;
  auto c = std::make_unique<Completion>();
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = &on_request_done;
  param.user_data = c.get();
  const std::uint64_t remote = shard.base + disp;
  std::shared_lock lock(fabric_.peers_mutex());
  if (peer->failed()) return {Errc::kTransport, 0, "ucx peer has failed"};
  ucs_status_ptr_t req =
      is_put ? ucp_put_nbx(peer->endpoint(), buffer, bytes, remote, shard.rkey, &param)
             : ucp_get_nbx(peer->endpoint(), buffer, bytes, remote, shard.rkey, &param);
  return track(req, std::move(c), peer, rank, is_put);
}

Status UcxShards::complete(int rank, bool all) {
  Status first;
  std::vector<Peer*> flush_peers;
  OutstandingList& list = outstanding();
  for (auto it = list.begin(); it != list.end();) {
    if (it->owner != this || (!all && it->rank != rank)) {
      ++it;
      continue;
    }
    if (it->request != nullptr) {
      Status s = fabric_.wait(it->request, *it->completion, *it->peer);
      if (first.ok() && !s.ok()) first = s;
    }
    if (it->is_put &&
        std::find(flush_peers.begin(), flush_peers.end(), it->peer) == flush_peers.end()) {
      flush_peers.push_back(it->peer);
    }
    it = list.erase(it);
  }
  // A put is complete at the target only once its endpoint is flushed.
  for (Peer* p : flush_peers) {
    Completion c;
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = &on_request_done;
    param.user_data = &c;
    ucs_status_ptr_t req = nullptr;
    {
      std::shared_lock lock(fabric_.peers_mutex());
      if (p->failed()) {
        if (first.ok()) first = Status(Errc::kTransport, 0, "ucx peer has failed");
        continue;
      }
      req = ucp_ep_flush_nbx(p->endpoint(), &param);
    }
    if (UCS_PTR_IS_ERR(req)) {
      if (first.ok()) first = from_ucs(UCS_PTR_STATUS(req), "ucp_ep_flush_nbx");
    } else if (req != nullptr) {
      Status s = fabric_.wait(req, c, *p);
      if (first.ok() && !s.ok()) first = s;
    }
  }
  return first;
}

Status UcxShards::flush(int rank) {
  return complete(rank, false);
}

Status UcxShards::flush_all() {
  return complete(-1, true);
}

}  // namespace larder::ucx
