#include "ucx_transport/fabric.hpp"

#include "runtime/common/content_hash.hpp"

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "runtime/common/content_hash.hpp"
#include "runtime/common/log.hpp"
#include "runtime/directory/message_shards.hpp"
#include "ucx_transport/message_reads.hpp"
#include "ucx_transport/ucx_messenger.hpp"
#include "ucx_transport/ucx_shards.hpp"
#include "ucx_transport/ucx_status.hpp"

namespace larder::ucx {

void on_request_done(void* /*request*/, ucs_status_t status, void* user_data) {
  auto* c = static_cast<Completion*>(user_data);
  std::lock_guard lock(c->mu);  // the waiter takes mu before it lets c go out of scope
  c->status = status;
  c->done.store(true, std::memory_order_release);
  c->cv.notify_all();
}

namespace {

constexpr auto kSpin = std::chrono::microseconds(50);
constexpr auto kSlice = std::chrono::milliseconds(1);

}  // namespace

Fabric::Fabric(UcxOptions options) : options_(std::move(options)) {}

Result<std::unique_ptr<Fabric>> Fabric::create(MPI_Comm comm, const LocalTiers& tiers,
                                               const UcxOptions& options, std::size_t shard_bytes) {
  std::unique_ptr<Fabric> t(new Fabric(options));
  MPI_Comm_rank(comm, &t->rank_);
  MPI_Comm_size(comm, &t->size_);
  Status local;
  auto context = create_context();
  if (context.ok()) {
    t->context_ = std::move(*context);
    auto worker = create_worker(t->context_.get());
    if (worker.ok()) {
      t->worker_ = std::move(*worker);
      local = from_ucs(ucp_worker_get_efd(t->worker_.get(), &t->event_fd_), "ucp_worker_get_efd");
    } else {
      local = worker.status();
    }
  } else {
    local = context.status();
  }
  // Every rank takes part in the exchange, even one whose UCX failed, so nobody hangs; the
  // caller agrees on the outcome collectively.
  Status exchanged = t->exchange(comm, tiers);
  if (local.ok()) local = exchanged;
  if (local.ok()) {
    auto messenger = UcxMessenger::create(*t);
    if (messenger.ok()) {
      t->messenger_ = std::move(*messenger);
    } else {
      local = messenger.status();
    }
  }
  // Collective: every rank takes part, even one whose UCX failed. One-sided operations only if
  // every rank can do them in hardware (or the user asked for them): the shards are one kind or
  // the other, and so are reads.
  const bool ask =
      options.directory_ops == DirectoryOps::kAuto || options.remote_reads == RemoteReads::kAuto;
  int hardware = 0;
  if (ask && local.ok()) {
    auto found = has_hardware_rma(t->context_.get());
    hardware = found.ok() && *found ? 1 : 0;
  }
  int everywhere = 0;  // always collective: ranks may have been given different settings
  if (MPI_Allreduce(&hardware, &everywhere, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) {
    if (local.ok()) local = Status(Errc::kTransport, 0, "MPI_Allreduce failed");
  }
  auto decide = [everywhere](DirectoryOps asked) {
    return asked == DirectoryOps::kMessages || (asked == DirectoryOps::kAuto && everywhere == 0);
  };
  const bool as_messages = shard_bytes > 0 && decide(options.directory_ops);
  if (local.ok() && decide(options.remote_reads)) {
    auto reads = MessageReads::create(*t, *t->messenger_);
    if (reads.ok()) {
      t->message_reads_ = std::move(*reads);
      for (Tier tier : {Tier::kMem, Tier::kDisk}) {
        if (const Arena* arena = tiers.get(tier); arena != nullptr) {
          t->message_reads_->serve(tier, std::span(arena->data(), arena->capacity()));
        }
      }
    } else {
      local = reads.status();
    }
  } else if (local.ok()) {
    // Gets: a holder checks its disk-tier chunks before they are read (HolderChecks).
    Fabric* fabric = t.get();
    t->holder_checks_ =
        std::make_unique<HolderChecks>(t->rank_, *t->messenger_, options.timeout,
                                       [fabric](int rank) { return fabric->peer_failed(rank); });
  }
  if (shard_bytes > 0 && as_messages) {
    if (local.ok()) {
      Fabric* fabric = t.get();
      t->message_shards_ = std::make_unique<MessageShards>(
          t->rank_, t->size_, shard_bytes, *t->messenger_, options.timeout,
          [fabric](int rank) { return fabric->peer_failed(rank); },
          [fabric](int rank) { fabric->give_up(rank); });
    }
  } else if (shard_bytes > 0) {
    // Collective: every rank takes part, even one whose UCX failed.
    auto shards = UcxShards::create(comm, *t, local.ok() ? shard_bytes : 0);
    if (shards.ok()) {
      t->shards_ = std::move(*shards);
    } else if (local.ok()) {
      local = shards.status();
    }
  }
  if (!local.ok()) {
    (void)t->close();
    return local;
  }
  return t;
}

Fabric::~Fabric() {
  if (!closed_ && worker_) {
    LARDER_LOG_WARN("ucx transport destroyed without close(); closing endpoints now");
    for (auto& [rank, peer] : peers_) {
      if (peer) peer->close(worker_.get());
    }
  }
}

std::vector<ProgressSource> Fabric::progress_sources() {
  ProgressSource source;
  ucp_worker_h worker = worker_.get();
  source.progress = [worker] { return ucp_worker_progress(worker) != 0; };
  source.event_fd = event_fd_;
  source.arm = [worker] { return ucp_worker_arm(worker) == UCS_OK; };
  std::vector<ProgressSource> sources{std::move(source)};
  if (messenger_) {
    // Message handlers run here, after ucp_worker_progress returned (see ucx_messenger.hpp).
    ProgressSource messages;
    UcxMessenger* m = messenger_.get();
    messages.progress = [m] { return m->dispatch(); };
    messages.event_fd = m->event_fd();
    messages.arm = [m] { return m->arm(); };
    sources.push_back(std::move(messages));
  }
  return sources;
}

Result<Peer*> Fabric::connected_peer(int rank) {
  if (rank < 0 || rank >= size_) return Status(Errc::kInvalidArgument, EINVAL, "no such rank");
  {
    std::shared_lock lock(peers_mu_);
    if (Peer* p = find_peer(rank); p != nullptr) {
      if (p->failed())
        return Status(Errc::kTransport, 0, "ucx peer " + std::to_string(rank) + " has failed");
      if (p->connected()) return p;
    }
  }
  std::unique_lock lock(peers_mu_);
  Peer* p = peer_locked(rank);
  if (p == nullptr) {
    return Status(Errc::kTransport, 0, "no usable UCX record of rank " + std::to_string(rank));
  }
  if (p->connected() || p->failed()) return p;
  std::vector<std::byte> address = p->info().address;
  if (rank == options_.fault_peer && rank != rank_) {  // a rank always reaches itself
    auto dead = dead_worker_address();
    if (!dead.ok()) return dead.status();
    address = std::move(*dead);
    LARDER_LOG_WARN("fault injection: the endpoint to rank {} goes to a dead worker", rank);
  }
  if (Status s = p->connect(worker_.get(), address, &closing_, rank == rank_); !s.ok()) {
    p->mark_failed();
    return s;
  }
  return p;
}

Peer* Fabric::find_peer(int rank) const noexcept {
  auto it = peers_.find(rank);
  return it == peers_.end() ? nullptr : it->second.get();
}

namespace {

// A rank's record (Fabric::exchange): worker address, then per tier base, size and packed key.
std::optional<PeerInfo> peer_info(std::span<const std::byte> record) {
  std::size_t at = 0;
  auto take = [&](void* out, std::size_t n) {
    if (at + n > record.size()) return false;
    std::memcpy(out, record.data() + at, n);
    at += n;
    return true;
  };
  auto take_bytes = [&](std::vector<std::byte>& out) {
    std::uint64_t len = 0;
    if (!take(&len, sizeof len) || len > record.size() - at) return false;
    out.assign(record.data() + at, record.data() + at + len);
    at += len;
    return true;
  };
  PeerInfo info;
  if (record.empty() || !take_bytes(info.address)) return std::nullopt;
  for (int t = 0; t < kTierCount; ++t) {
    if (!take(&info.arena_base[t], 8) || !take(&info.arena_size[t], 8) ||
        !take_bytes(info.packed_rkey[t])) {
      return std::nullopt;
    }
  }
  return info;
}

}  // namespace

Peer* Fabric::peer_locked(int rank) {
  if (Peer* p = find_peer(rank); p != nullptr) return p;
  auto info = peer_info(book_.record(rank));
  if (!info) return nullptr;
  auto made = peers_.emplace(rank, std::make_unique<Peer>(std::move(*info)));
  return made.first->second.get();
}

Fabric::PeerState Fabric::peer_state() {
  PeerState state;
  std::shared_lock lock(peers_mu_);
  state.peers = peers_.size();
  for (const auto& [rank, peer] : peers_) {
    const PeerInfo& info = peer->info();
    state.peer_bytes += sizeof(Peer) + info.address.size();
    for (const auto& key : info.packed_rkey) state.peer_bytes += key.size();
  }
  state.book_bytes = book_.mapped_bytes() + (shards_ ? shards_->book_bytes() : 0);
  state.startup = startup_;
  return state;
}

void Fabric::count_startup(const BookTraffic& t) noexcept {
  startup_.received += t.received;
  startup_.sent += t.sent;
  startup_.collectives += t.collectives;
}

Result<std::vector<std::byte>> Fabric::dead_worker_address() {
  auto worker = create_worker(context_.get());
  if (!worker.ok()) return worker.status();
  return worker_address(worker->get());  // the worker is destroyed on return
}

void Fabric::fail_peer(Peer& peer) noexcept {
  peer.mark_failed();
  std::unique_lock lock(peers_mu_);
  peer.close(worker_.get());  // force: outstanding gets complete with UCS_ERR_CANCELED
}

Status Fabric::wait(void* request, Completion& c, Peer& peer) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + options_.timeout;
  bool timed_out = false;
  while (!c.done.load(std::memory_order_acquire)) {
    if (ucp_worker_progress(worker_.get()) != 0) continue;
    const auto now = std::chrono::steady_clock::now();
    if (now - start < kSpin) continue;
    if (!timed_out && now >= deadline) {
      timed_out = true;
      LARDER_LOG_LIMITED(kWarn, "ucx get timed out after {} ms; giving up on that peer",
                         options_.timeout.count());
      fail_peer(peer);
      continue;
    }
    // The progress thread wakes on the worker's event fd and completes the request.
    std::unique_lock lock(c.mu);
    c.cv.wait_for(lock, kSlice, [&] { return c.done.load(std::memory_order_acquire); });
  }
  { std::lock_guard lock(c.mu); }  // the callback has left its critical section
  ucp_request_free(request);
  if (timed_out) return {Errc::kTimeout, ETIMEDOUT, "ucx request timed out"};
  return from_ucs(c.status, "ucx request");
}

Status Fabric::issue_get(const GetOp& op, Completion& c, Peer** peer_out, void** request) {
  *request = nullptr;
  auto peer = connected_peer(op.owner);
  if (!peer.ok()) return peer.status();
  Peer& p = **peer;
  *peer_out = &p;
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.send = &on_request_done;
  param.user_data = &c;
  ucs_status_ptr_t request_or_error = nullptr;
  {
    std::shared_lock lock(peers_mu_);
    if (p.failed() || !p.connected()) return {Errc::kTransport, 0, "ucx peer has failed"};
    std::uint64_t base = 0;
    std::uint64_t size = 0;
    ucp_rkey_h rkey = nullptr;
    if (op.tier == Tier::kFile) {
      const Peer::Segment* seg = p.segment(op.segment);
      if (seg == nullptr) return {Errc::kUnavailable, 0, "segment not learned"};
      base = seg->base;
      size = seg->size;
      rkey = seg->rkey;
    } else {
      const int t = static_cast<int>(op.tier);
      base = p.info().arena_base[t];
      size = p.info().arena_size[t];
      rkey = p.rkey(op.tier);
    }
    if (op.offset + op.into.size() > size || rkey == nullptr) {
      return {Errc::kInvalidArgument, ERANGE, "get beyond the end of the peer's memory"};
    }
    request_or_error =
        ucp_get_nbx(p.endpoint(), op.into.data(), op.into.size(), base + op.offset, rkey, &param);
  }
  if (UCS_PTR_IS_ERR(request_or_error)) {
    p.mark_failed();
    return from_ucs(UCS_PTR_STATUS(request_or_error), "ucp_get_nbx");
  }
  *request = request_or_error;  // null: completed at once
  return {};
}

std::uint64_t Fabric::bytes_hashed() const noexcept {
  return bytes_hashed_.load(std::memory_order_relaxed) +
         (message_reads_ ? message_reads_->bytes_hashed() : 0);
}

Status Fabric::get(const GetOp& op) {
  Status out;
  get_many(std::span(&op, 1), std::span(&out, 1));
  return out;
}

Result<std::vector<std::byte>> Fabric::expose(std::uint32_t segment, std::span<std::byte> memory) {
  if (closing_.load(std::memory_order_acquire) || !context_) {
    return Status(Errc::kUnavailable, 0, "the ucx transport is closing");
  }
  // Descriptor: base (8 bytes), size (8 bytes), the packed remote key.
  std::vector<std::byte> desc(16);
  const auto base = reinterpret_cast<std::uint64_t>(memory.data());
  const std::uint64_t size = memory.size();
  std::memcpy(desc.data(), &base, 8);
  std::memcpy(desc.data() + 8, &size, 8);
  if (memory.empty()) return desc;
  auto reg = Registration::map(context_.get(), memory.data(), memory.size());
  if (!reg.ok()) return reg.status();
  auto packed = reg->packed_rkey();
  if (!packed.ok()) return packed.status();
  if (desc.size() + packed->size() > kMaxSegmentDescriptor) {
    return Status(Errc::kUnavailable, 0,
                  "the remote key of a segment (" + std::to_string(packed->size()) +
                      " bytes) does not fit a directory entry");
  }
  desc.insert(desc.end(), packed->begin(), packed->end());
  if (message_reads_) message_reads_->serve_segment(segment, memory);
  std::lock_guard lock(segments_mu_);
  segment_registrations_.push_back(std::move(*reg));
  return desc;
}

bool Fabric::knows(int owner, std::uint32_t segment) {
  if (owner < 0 || owner >= size_) return false;
  std::shared_lock lock(peers_mu_);
  const Peer* p = find_peer(owner);
  return p != nullptr && p->connected() && p->segment(segment) != nullptr;
}

Status Fabric::learn(int owner, std::uint32_t segment, std::span<const std::byte> descriptor) {
  if (descriptor.size() < 16) return {Errc::kInvalidArgument, EINVAL, "bad segment descriptor"};
  auto peer = connected_peer(owner);
  if (!peer.ok()) return peer.status();
  std::uint64_t base = 0;
  std::uint64_t size = 0;
  std::memcpy(&base, descriptor.data(), 8);
  std::memcpy(&size, descriptor.data() + 8, 8);
  std::unique_lock lock(peers_mu_);
  if ((*peer)->failed() || !(*peer)->connected()) {
    return {Errc::kTransport, 0, "ucx peer has failed"};
  }
  return (*peer)->add_segment(segment, base, size, descriptor.subspan(16));
}

void Fabric::set_serve_check(const ServeCheck& check) {
  if (message_reads_) message_reads_->set_serve_check(check);
  if (holder_checks_) holder_checks_->set_check(check);
}

void Fabric::get_many(std::span<const GetOp> ops, std::span<Status> out) {
  if (message_reads_) {
    if (closing_.load(std::memory_order_acquire)) {
      for (Status& s : out) s = Status(Errc::kUnavailable, 0, "the ucx transport is closing");
      return;
    }
    message_reads_->get_many(ops, out);
    return;
  }
  // Every get is issued first, so that they overlap; then each is waited for. Each is issued in
  // pieces (piece_of), whether or not its hash is wanted, so that checking costs only the hash:
  // a wanted hash is fed each piece as soon as it has arrived, while the next ones are still in
  // flight.
  struct InFlight {
    Completion c;
    Peer* peer = nullptr;
    void* request = nullptr;
    Status issued;
    std::span<std::byte> into;
  };
  std::vector<std::vector<std::unique_ptr<InFlight>>> flights(ops.size());
  // Disk-tier chunks are checked by their holders first; a chunk refused is not read.
  for (Status& s : out) s = Status();
  if (holder_checks_) holder_checks_->check(ops, out);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (!out[i].ok()) continue;
    const std::uint64_t piece = piece_of(ops[i].into.size());
    for (std::uint64_t at = 0; at == 0 || at < ops[i].into.size(); at += piece) {
      auto f = std::make_unique<InFlight>();
      GetOp part = ops[i];
      part.offset += at;
      part.into = ops[i].into.subspan(at, std::min<std::uint64_t>(piece, part.into.size() - at));
      f->into = part.into;
      f->issued = issue_get(part, f->c, &f->peer, &f->request);
      flights[i].push_back(std::move(f));
      if (!flights[i].back()->issued.ok()) break;
    }
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    std::optional<ContentHasher> hasher;
    if (ops[i].hashed != nullptr) hasher.emplace();
    std::uint64_t ns = 0;
    for (auto& f : flights[i]) {
      Status s = std::move(f->issued);
      if (s.ok() && f->request != nullptr) {
        s = wait(f->request, f->c, *f->peer);
        if (!s.ok()) f->peer->mark_failed();
      }
      if (!s.ok() && out[i].ok()) out[i] = std::move(s);
      if (out[i].ok() && hasher) {
        const auto t0 = std::chrono::steady_clock::now();
        hasher->update(f->into);
        bytes_hashed_.fetch_add(f->into.size(), std::memory_order_relaxed);
        ns += static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now() - t0)
                                             .count());
      }
    }
    if (ops[i].hashed != nullptr) {
      *ops[i].hashed = Hashed{out[i].ok() ? hasher->digest() : 0, ns};
    }
  }
}

Status Fabric::exchange(MPI_Comm comm, const LocalTiers& tiers) {
  // This rank's part: worker address, then per tier base, size and packed rkey.
  std::vector<std::byte> mine;
  auto append = [&mine](const void* p, std::size_t n) {
    const auto* b = static_cast<const std::byte*>(p);
    mine.insert(mine.end(), b, b + n);
  };
  Status local;
  std::vector<std::byte> address;
  if (worker_) {
    auto a = worker_address(worker_.get());
    if (a.ok())
      address = std::move(*a);
    else
      local = a.status();
  }
  const std::uint64_t alen = address.size();
  append(&alen, sizeof alen);
  append(address.data(), address.size());
  for (Tier tier : {Tier::kMem, Tier::kDisk}) {
    const Arena* arena = tiers.get(tier);
    std::uint64_t base = arena != nullptr ? reinterpret_cast<std::uint64_t>(arena->data()) : 0;
    std::uint64_t size = arena != nullptr ? arena->capacity() : 0;
    std::vector<std::byte> rkey;
    if (local.ok() && context_ && size > 0) {
      auto reg = Registration::map(context_.get(), arena->data(), size);
      if (reg.ok()) {
        auto packed = reg->packed_rkey();
        if (packed.ok())
          rkey = std::move(*packed);
        else
          local = packed.status();
        registrations_.push_back(std::move(*reg));
      } else {
        local = reg.status();
      }
    }
    if (rkey.empty()) size = 0;
    const std::uint64_t rlen = rkey.size();
    append(&base, sizeof base);
    append(&size, sizeof size);
    append(&rlen, sizeof rlen);
    append(rkey.data(), rkey.size());
  }
  // Every rank's part in its host's address book (one copy per host, not per rank).
  BookTraffic traffic;
  auto book = AddressBook::create(comm, mine, options_.book_dir, &traffic);
  count_startup(traffic);
  if (!book.ok()) return book.status();
  book_ = std::move(*book);
  return local;
}

ShardOps* Fabric::shards() noexcept {
  if (message_shards_) return message_shards_.get();
  return shards_.get();
}

void Fabric::give_up(int rank) {
  if (rank < 0 || rank >= size_ || rank == rank_) return;  // a rank always reaches itself
  Peer* p = nullptr;
  {
    std::unique_lock lock(peers_mu_);
    p = peer_locked(rank);  // one never contacted is made, so that it stays failed
  }
  if (p != nullptr && !p->failed()) fail_peer(*p);
}

bool Fabric::peer_failed(int rank) {
  if (rank < 0 || rank >= size_) return true;
  std::shared_lock lock(peers_mu_);
  const Peer* p = find_peer(rank);
  return p != nullptr && p->failed();  // a rank not contacted yet has not failed
}

Messenger* Fabric::messenger() noexcept {
  return messenger_.get();
}

std::uint64_t Fabric::messages_sent() const noexcept {
  return (messenger_ ? messenger_->messages_sent() : 0) +
         (message_reads_ ? message_reads_->pieces_served() : 0);
}

Status Fabric::close() {
  if (closed_) return {};
  closed_ = true;
  if (shards_) shards_->close();  // remote keys before the endpoints go
  shards_.reset();
  message_reads_.reset();  // its request handler is the messenger's, its reply handler the worker's
  holder_checks_.reset();  // its handlers are the messenger's
  message_shards_.reset();  // its handlers are the messenger's
  messenger_.reset();
  std::unique_lock lock(peers_mu_);
  for (auto& [rank, peer] : peers_) {
    if (peer && worker_) peer->close(worker_.get());
  }
  peers_.clear();
  book_ = AddressBook();
  {
    std::lock_guard segments(segments_mu_);
    segment_registrations_.clear();
  }
  registrations_.clear();
  worker_.reset();
  context_.reset();
  return {};
}

}  // namespace larder::ucx
