#include "ucx_transport/message_reads.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <vector>

#include "runtime/common/content_hash.hpp"
#include "runtime/common/log.hpp"
#include "ucx_transport/fabric.hpp"
#include "ucx_transport/ucx_messenger.hpp"
#include "ucx_transport/ucx_status.hpp"

namespace larder::ucx {
namespace {

// The active-message id of a reply (the messenger's is 1).
constexpr unsigned kReplyAmId = 2;
constexpr auto kSpin = std::chrono::microseconds(50);
constexpr auto kSlice = std::chrono::milliseconds(1);

// How long a reader still waits for a piece whose transfer had started when its holder failed
// or timed out (the holder's endpoint is closed by then, which ends the transfer).
constexpr auto kGrace = std::chrono::seconds(1);

// One piece asked for, in a request message (fixed layout: both sides are this build).
struct Request {
  std::uint64_t id = 0;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint32_t segment = 0;
  std::uint32_t tier = 0;
  Transport::ChunkOf chunk;  // the chunk the piece belongs to (length 0: not said)
};
static_assert(sizeof(Request) == 56);
constexpr std::size_t kPerMessage = kMaxMessage / sizeof(Request);

// The header of a reply; its data is the piece (none when error != 0).
struct Reply {
  std::uint64_t id = 0;
  std::int32_t error = 0;  // errno: the holder cannot serve that range
  std::uint32_t unused = 0;
};

// A reply being sent: its header lives until UCX is done with it.
struct OutgoingReply {
  Reply reply;
  Peer* peer = nullptr;  // outlives the request: endpoints close after this object
};

}  // namespace

// The waiting reader's side of a batch: woken once, when the last of its pieces completes (a
// batch of list-ahead has about 20 pieces per holder; a wake-up per piece was a futex call and a
// context switch each), and every kSlice to look for failed holders.
struct Batch {
  std::mutex mu;
  std::condition_variable cv;
  std::size_t unfinished = 0;  // guarded by mu: pieces that nobody has finished or failed yet
};

// Receive buffers for pieces whose destination is the caller's own memory, kept between reads.
// Allocated per piece, a read's buffers came from fresh pages each time (freed, glibc gives the
// heap's top back to the kernel): a page fault and a zeroed page per 4 KiB received, 90,000 a
// second at 1.8 GB/s, a tenth of a core. At most kKeep buffers of kMaxPiece are kept (only the
// pages a piece used are resident); a piece the pool has none for gets one of its own.
class MessageReads::BouncePool {
 public:
  static constexpr std::size_t kKeep = 16;

  std::unique_ptr<std::byte[]> get() {
    {
      std::lock_guard lock(mu_);
      if (!free_.empty()) {
        std::unique_ptr<std::byte[]> b = std::move(free_.back());
        free_.pop_back();
        return b;
      }
    }
    return std::make_unique_for_overwrite<std::byte[]>(kMaxPiece);
  }
  void put(std::unique_ptr<std::byte[]> b) noexcept {
    std::lock_guard lock(mu_);
    if (free_.size() < kKeep) free_.push_back(std::move(b));
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<std::byte[]>> free_;  // guarded by mu_; each kMaxPiece bytes
};

// A piece's receive buffer: from the pool when the piece fits one of its buffers. Returned to
// the pool when the piece is destroyed, after any late transfer into it has ended (a receive in
// flight holds the piece).
class Bounce {
 public:
  Bounce() = default;
  Bounce(std::shared_ptr<MessageReads::BouncePool> pool, std::size_t n)
      : pool_(n <= kMaxPiece ? std::move(pool) : nullptr),
        mem_(pool_ ? pool_->get() : std::make_unique_for_overwrite<std::byte[]>(n)) {}
  Bounce(const Bounce&) = delete;
  Bounce& operator=(const Bounce&) = delete;
  Bounce(Bounce&&) noexcept = default;
  Bounce& operator=(Bounce&&) noexcept = default;
  ~Bounce() {
    if (pool_ && mem_) pool_->put(std::move(mem_));
  }
  explicit operator bool() const noexcept { return mem_ != nullptr; }
  std::byte* get() const noexcept { return mem_.get(); }

 private:
  std::shared_ptr<MessageReads::BouncePool> pool_;
  std::unique_ptr<std::byte[]> mem_;
};

// The hash of one op that wants it, fed its pieces in order as they arrive: by the thread that
// receives each (the progress thread, or the reader while it spins), right after the bytes
// landed in that core's cache. The reader's copy out of the bounce buffers then runs alongside,
// on the other core, instead of copy and hash one after the other on the reader's.
struct HashFeed {
  std::mutex mu;
  ContentHasher hasher;                        // guarded by mu
  std::vector<MessageReads::Pending*> pieces;  // the op's pieces, in order; set before sending
  std::size_t next = 0;                        // guarded by mu: pieces hashed so far
  bool broken = false;                         // guarded by mu: a piece failed
  bool closed = false;                         // guarded by mu: the reader is done with it
  std::uint64_t ns = 0;                        // guarded by mu: time spent hashing
  std::condition_variable hashed;              // a piece was hashed, or the feed broke
  std::atomic<std::uint64_t>* bytes_hashed = nullptr;

  // A piece was marked done: hashes every piece from `next` on that is done (its bytes are in its
  // target, or it failed: the feed breaks). Pieces are read through the pointers only before
  // `closed`: the reader holds them until it closes the feed.
  void arrive();
  // The reader, once every piece has settled: when all succeeded, waits for their finishers'
  // hashes (each finisher hashes right after it marks its piece done); then no later arrival is
  // hashed. The digest, or 0 when a piece failed (pieces the reader failed itself never arrive).
  std::uint64_t close(bool ok, std::uint64_t* hash_ns);
};

struct MessageReads::Pending {
  int owner = -1;
  std::uint64_t id = 0;
  std::span<std::byte> into;
  // The target when `into` is not memory this rank serves (not zeroed: the reply fills it).
  Bounce bounce;
  bool wake = false;  // the reader copies pieces out as they arrive: woken by each, not the last
  std::shared_ptr<Batch> batch;
  std::shared_ptr<HashFeed> feed;  // null: the read does not want its hash
  Status status;                   // written before done
  std::atomic<bool> done{false};   // release by finish(), acquire by the reader

  std::byte* target() noexcept { return bounce ? bounce.get() : into.data(); }
  // Called once, by whoever took the piece from the table.
  void finish(Status s) {
    status = std::move(s);
    bool last = false;
    {
      std::lock_guard lock(batch->mu);
      done.store(true, std::memory_order_release);
      last = --batch->unfinished == 0;
    }
    // After the unlock (the reader would block on the lock at once); `batch` lives on in this
    // piece, which its finisher holds.
    if (last || wake) batch->cv.notify_all();
    // Hashed while the reader copies it out (both only read the piece's buffer); the reader
    // waits for the hash in HashFeed::close.
    if (feed) feed->arrive();
  }
};

void HashFeed::arrive() {
  std::unique_lock lock(mu);
  if (closed || broken) return;
  const auto t0 = std::chrono::steady_clock::now();
  std::uint64_t bytes = 0;
  for (; next < pieces.size() && pieces[next]->done.load(std::memory_order_acquire); ++next) {
    MessageReads::Pending* p = pieces[next];
    if (!p->status.ok() || !hasher.valid()) {
      broken = true;
      break;
    }
    hasher.update(std::span<const std::byte>(p->target(), p->into.size()));
    bytes += p->into.size();
  }
  if (bytes == 0 && !broken) return;
  ns += static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
          .count());
  bytes_hashed->fetch_add(bytes, std::memory_order_relaxed);
  lock.unlock();
  hashed.notify_all();
}

std::uint64_t HashFeed::close(bool ok, std::uint64_t* hash_ns) {
  std::unique_lock lock(mu);
  // Every piece of an op that succeeded has finished, and each finisher hashes after it marks
  // its piece done: wait for those hashes (no transfer is waited for).
  if (ok) hashed.wait(lock, [&] { return broken || next == pieces.size(); });
  closed = true;
  *hash_ns = ns;
  if (!ok || broken) return 0;
  return hasher.digest();
}

namespace {

// A rendezvous receive in flight: what its completion callback finishes (or frees).
struct Receiving {
  std::shared_ptr<MessageReads::Pending> pending;  // null: a late reply, received and dropped
  std::vector<std::byte> scratch;
};

void on_received(void* request, ucs_status_t status, std::size_t /*length*/, void* user_data) {
  auto* r = static_cast<Receiving*>(user_data);
  if (r->pending) {
    r->pending->finish(status == UCS_OK ? Status() : from_ucs(status, "ucx rendezvous receive"));
  }
  delete r;
  ucp_request_free(request);
}

// Receives a rendezvous reply (into `target`, or into scratch for a late one) and reports
// whether it completed at once.
void receive(ucp_worker_h worker, void* desc, std::size_t length, Receiving* r, std::byte* target) {
  if (target == nullptr) {
    r->scratch.resize(length);
    target = r->scratch.data();
  }
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  param.cb.recv_am = &on_received;
  param.user_data = r;
  ucs_status_ptr_t req = ucp_am_recv_data_nbx(worker, desc, target, length, &param);
  if (req != nullptr && !UCS_PTR_IS_ERR(req)) return;  // on_received finishes it
  if (r->pending) {
    r->pending->finish(req == nullptr ? Status()
                                      : from_ucs(UCS_PTR_STATUS(req), "ucp_am_recv_data_nbx"));
  }
  delete r;
}

}  // namespace

MessageReads::MessageReads(Fabric& fabric, UcxMessenger& messenger)
    : fabric_(fabric), messenger_(messenger), bounces_(std::make_shared<BouncePool>()) {}

Result<std::unique_ptr<MessageReads>> MessageReads::create(Fabric& fabric,
                                                           UcxMessenger& messenger) {
  std::unique_ptr<MessageReads> m(new MessageReads(fabric, messenger));
  auto handler = AmHandler::set(fabric.worker(), kReplyAmId, &MessageReads::on_reply, m.get());
  if (!handler.ok()) return handler.status();
  m->handler_ = std::move(*handler);
  MessageReads* self = m.get();
  messenger.on(Channel::kReadRequest,
               [self](int from, std::span<const std::byte> body) { self->on_request(from, body); });
  return m;
}

MessageReads::~MessageReads() {
  messenger_.on(Channel::kReadRequest, nullptr);
}

void MessageReads::serve(Tier tier, std::span<std::byte> memory) {
  tiers_[static_cast<std::size_t>(tier)] = memory;
}

void MessageReads::serve_segment(std::uint32_t id, std::span<std::byte> memory) {
  std::lock_guard lock(mu_);
  segments_[id] = memory;
}

void MessageReads::set_serve_check(Transport::ServeCheck check) {
  std::unique_lock lock(check_mu_);
  check_ = std::move(check);
}

std::span<const std::byte> MessageReads::served_bytes(Tier tier, std::uint32_t segment,
                                                      std::uint64_t offset, std::uint64_t length) {
  std::span<const std::byte> memory;
  if (tier == Tier::kFile) {
    std::lock_guard lock(mu_);
    auto it = segments_.find(segment);
    if (it != segments_.end()) memory = it->second;
  } else if (static_cast<std::size_t>(tier) < tiers_.size()) {  // an arena
    memory = tiers_[static_cast<std::size_t>(tier)];
  }
  if (length == 0 || offset > memory.size() || length > memory.size() - offset) return {};
  return memory.subspan(offset, length);
}

bool MessageReads::serves(std::span<const std::byte> range) {
  auto inside = [&](std::span<const std::byte> m) {
    return !m.empty() && range.data() >= m.data() &&
           range.data() + range.size() <= m.data() + m.size();
  };
  if (std::any_of(tiers_.begin(), tiers_.end(), inside)) return true;
  std::lock_guard lock(mu_);
  return std::any_of(segments_.begin(), segments_.end(),
                     [&](const auto& s) { return inside(s.second); });
}

void MessageReads::on_request(int from, std::span<const std::byte> body) {
  auto peer = fabric_.connected_peer(from);
  if (!peer.ok()) return;  // the reader gives up on this rank by itself
  for (std::size_t at = 0; at + sizeof(Request) <= body.size(); at += sizeof(Request)) {
    Request req;
    std::memcpy(&req, body.data() + at, sizeof req);
    auto out = std::make_unique<OutgoingReply>();
    out->reply.id = req.id;
    out->peer = *peer;
    std::span<const std::byte> bytes =
        req.tier <= static_cast<std::uint32_t>(Tier::kFile)
            ? served_bytes(static_cast<Tier>(req.tier), req.segment, req.offset, req.length)
            : std::span<const std::byte>();
    if (bytes.empty()) out->reply.error = ERANGE;
    // A piece of a chunk whose hash the reader gave: the holder's own check first (a disk-tier
    // chunk whose pages come from the device now is hashed whole; anything else passes at once).
    if (!bytes.empty() && req.chunk.length > 0 && req.chunk.hash != 0 &&
        req.offset >= req.chunk.offset &&
        req.offset + req.length <= req.chunk.offset + req.chunk.length) {
      std::shared_lock lock(check_mu_);
      if (check_ && !check_(static_cast<Tier>(req.tier), req.segment, req.chunk)) {
        out->reply.error = EBADMSG;
        bytes = {};
      }
    }
    ucp_request_param_t param{};
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = &message_sent<OutgoingReply>;
    param.user_data = out.get();
    ucs_status_ptr_t sent = nullptr;
    {
      std::shared_lock lock(fabric_.peers_mutex());
      if ((*peer)->failed()) return;
      sent = ucp_am_send_nbx((*peer)->endpoint(), kReplyAmId, &out->reply, sizeof out->reply,
                             bytes.data(), bytes.size(), &param);
    }
    if (UCS_PTR_IS_ERR(sent)) {
      (*peer)->mark_failed();
      LARDER_LOG_LIMITED(kWarn, "cannot answer a read of rank {}: {}", from,
                         from_ucs(UCS_PTR_STATUS(sent), "ucp_am_send_nbx").to_string());
      return;
    }
    if (sent != nullptr) (void)out.release();  // message_sent frees it and the request
    pieces_served_.fetch_add(1, std::memory_order_relaxed);
  }
}

std::shared_ptr<MessageReads::Pending> MessageReads::take(std::uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = pending_.find(id);
  if (it == pending_.end()) return nullptr;
  std::shared_ptr<Pending> p = std::move(it->second);
  pending_.erase(it);
  return p;
}

ucs_status_t MessageReads::on_reply(void* arg, const void* header, std::size_t header_length,
                                    void* data, std::size_t length,
                                    const ucp_am_recv_param_t* param) {
  auto* self = static_cast<MessageReads*>(arg);
  const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
  std::shared_ptr<Pending> p;
  Reply reply;
  if (header_length == sizeof reply) {
    std::memcpy(&reply, header, sizeof reply);
    p = self->take(reply.id);
  }
  if (p && (reply.error != 0 || length != p->into.size())) {
    p->finish(Status(Errc::kTransport, reply.error != 0 ? reply.error : EPROTO,
                     "rank " + std::to_string(p->owner) + " cannot serve that read"));
    p.reset();
  }
  if (!rndv) {
    if (p) {
      std::memcpy(p->target(), data, length);
      p->finish(Status());
    }
    return UCS_OK;
  }
  // Rendezvous: received into the piece's target, or received and dropped when nobody waits.
  std::byte* target = p ? p->target() : nullptr;
  receive(self->fabric_.worker(), data, length, new Receiving{std::move(p), {}}, target);
  return UCS_OK;
}

void MessageReads::get_many(std::span<const Transport::GetOp> ops, std::span<Status> out) {
  auto batch = std::make_shared<Batch>();
  // Each op is asked for in pieces (piece_of): the reader copies each out of its bounce
  // buffer, and hashes it when the caller wants the hash, while the next ones arrive.
  struct Part {
    std::size_t op = 0;
    std::uint64_t offset = 0;  // in the op
    std::shared_ptr<Pending> p;
    bool settled = false;  // its outcome is final (in `status`)
    Status status;
  };
  std::vector<Part> parts;
  std::vector<std::shared_ptr<HashFeed>> feeds(ops.size());  // for ops that want their hash
  std::vector<std::size_t> first(ops.size() + 1, 0);  // op i's parts: [first[i], first[i + 1])
  for (std::size_t i = 0; i < ops.size(); ++i) {
    first[i] = parts.size();
    const Transport::GetOp& op = ops[i];
    if (op.owner < 0 || op.owner >= fabric_.size() || op.into.empty()) {
      out[i] = Status(Errc::kInvalidArgument, EINVAL, "bad remote read");
      continue;
    }
    out[i] = Status();
    const bool bounce = !serves(op.into);
    const bool split = op.into.size() > piece_of(op.into.size());
    const std::uint64_t piece = split ? piece_of(op.into.size()) : op.into.size();
    if (op.hashed != nullptr) {
      feeds[i] = std::make_shared<HashFeed>();
      feeds[i]->bytes_hashed = &bytes_hashed_;
    }
    for (std::uint64_t at = 0; at < op.into.size(); at += piece) {
      auto p = std::make_shared<Pending>();
      p->owner = op.owner;
      p->into = op.into.subspan(at, std::min<std::uint64_t>(piece, op.into.size() - at));
      p->batch = batch;
      p->wake = split && bounce;  // copied out as they arrive
      if (bounce) p->bounce = Bounce(bounces_, p->into.size());
      if (feeds[i]) {
        p->feed = feeds[i];
        feeds[i]->pieces.push_back(p.get());
      }
      parts.push_back(Part{i, at, std::move(p)});
      ++batch->unfinished;  // before any reply can arrive: the pieces are not in pending_ yet
    }
  }
  first[ops.size()] = parts.size();
  std::unordered_map<int, std::vector<std::size_t>> by_owner;  // indices into parts
  {
    std::lock_guard lock(mu_);
    for (std::size_t k = 0; k < parts.size(); ++k) {
      parts[k].p->id = next_id_++;
      pending_.emplace(parts[k].p->id, parts[k].p);
      by_owner[parts[k].p->owner].push_back(k);
    }
  }
  auto fail = [&](std::size_t k, Status s) {
    // Only whoever takes a piece from the table finishes it: here, nobody else will.
    if (take(parts[k].p->id)) {
      parts[k].status = std::move(s);
      parts[k].settled = true;
      std::lock_guard lock(batch->mu);
      --batch->unfinished;
    }
  };
  std::vector<Request> body;
  for (const auto& [owner, indices] : by_owner) {
    for (std::size_t at = 0; at < indices.size(); at += kPerMessage) {
      const auto part = std::span(indices).subspan(at, std::min(kPerMessage, indices.size() - at));
      body.clear();
      for (std::size_t k : part) {
        const Transport::GetOp& op = ops[parts[k].op];
        body.push_back(Request{parts[k].p->id, op.offset + parts[k].offset, parts[k].p->into.size(),
                               op.segment, static_cast<std::uint32_t>(op.tier), op.chunk});
      }
      const Status s =
          messenger_.send(owner, Channel::kReadRequest, std::as_bytes(std::span(body)));
      if (!s.ok()) {
        for (std::size_t k : part) fail(k, s);
      }
    }
  }
  // Folding: each op's settled pieces, in order, are copied out of their bounce buffers into the
  // caller's memory (their hash is made as they arrive: HashFeed).
  std::vector<std::size_t> folded(first.begin(), first.end() - 1);
  auto fold = [&](std::size_t i) {
    while (folded[i] < first[i + 1] && parts[folded[i]].settled) {
      const Part& part = parts[folded[i]++];
      if (!part.status.ok() && out[i].ok()) out[i] = part.status;
      if (!out[i].ok() || !part.p->bounce) continue;
      std::memcpy(part.p->into.data(), part.p->bounce.get(), part.p->into.size());
    }
  };
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + fabric_.timeout();
  std::unordered_map<int, std::chrono::steady_clock::time_point> given_up;  // owner: when
  for (;;) {
    bool all = true;
    std::size_t settled = 0;
    for (Part& part : parts) {
      if (!part.settled && part.p->done.load(std::memory_order_acquire)) {
        part.status = part.p->status;
        part.settled = true;
      }
      all = all && part.settled;
      settled += part.settled ? 1 : 0;
    }
    for (std::size_t i = 0; i < ops.size(); ++i) fold(i);
    if (all) break;
    const auto now = std::chrono::steady_clock::now();
    if (now - start < kSpin) {
      (void)ucp_worker_progress(fabric_.worker());
      continue;
    }
    for (std::size_t k = 0; k < parts.size(); ++k) {
      if (parts[k].settled) continue;
      const int owner = parts[k].p->owner;
      const bool late = now >= deadline;
      if (!late && !fabric_.peer_failed(owner)) continue;
      if (late && !given_up.contains(owner)) {
        LARDER_LOG_LIMITED(kWarn, "a read from rank {} timed out after {} ms; giving up on it",
                           owner, fabric_.timeout().count());
        fabric_.give_up(owner);
      }
      auto [when, added] = given_up.emplace(owner, now);
      fail(k, late ? Status(Errc::kTimeout, ETIMEDOUT, "ucx read timed out")
                   : Status(Errc::kTransport, 0, "ucx peer has failed"));
      // Its transfer had started: it ends with the endpoint; past the grace, the piece's own
      // buffer (or a never-reused arena range) may still receive it, unread.
      if (!parts[k].settled && now - when->second >= kGrace) {
        parts[k].status = Status(Errc::kTransport, 0, "ucx read from a failed peer did not end");
        parts[k].settled = true;
      }
    }
    std::unique_lock lock(batch->mu);  // finish() counts down under it: no wake-up is missed
    // Woken when the last piece completes, or by each piece of an op hashed as it arrives; done
    // waiting when a piece finished since the scan above (pieces finished = parts - unfinished).
    batch->cv.wait_for(lock, kSlice, [&] {
      return batch->unfinished == 0 || parts.size() - batch->unfinished > settled;
    });
  }
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].hashed == nullptr) continue;
    if (!feeds[i]) {  // never asked for
      *ops[i].hashed = Transport::Hashed{0, 0};
      continue;
    }
    std::uint64_t ns = 0;
    const std::uint64_t digest = feeds[i]->close(out[i].ok(), &ns);
    *ops[i].hashed = Transport::Hashed{digest, ns};
  }
}

}  // namespace larder::ucx
