#include "runtime/directory/message_shards.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"

namespace larder {
namespace {

// A request: its header, then per operation an OpRecord, followed for a put by its bytes (padded
// to 8). A reply: its header, then per operation its result: the old word (CAS, fetch-add) or the
// bytes (get, padded to 8); swaps and puts return nothing.
struct RequestHeader {
  std::uint64_t id = 0;
  std::uint32_t ops = 0;
  std::int32_t error = 0;  // replies: 0, or the errno the request was refused with
};
struct OpRecord {
  std::uint8_t kind = 0;
  std::uint8_t pad[3] = {};
  std::uint32_t bytes = 0;
  std::uint64_t disp = 0;
  std::uint64_t a = 0;
  std::uint64_t b = 0;
};
static_assert(sizeof(RequestHeader) == 16 && sizeof(OpRecord) == 32);

constexpr std::size_t pad8(std::size_t n) {
  return (n + 7) / 8 * 8;
}

using Kind = MessageShards::Kind;
using Op = MessageShards::Op;

std::size_t request_bytes(const Op& op) {
  return sizeof(OpRecord) + (op.kind == Kind::kPut ? pad8(op.bytes) : 0);
}

std::size_t reply_bytes(const Op& op) {
  switch (op.kind) {
    case Kind::kCas:
    case Kind::kFetchAdd:
      return 8;
    case Kind::kGet:
      return pad8(op.bytes);
    case Kind::kSwap:
    case Kind::kPut:
      return 0;
  }
  return 0;
}

constexpr auto kFailureCheck = std::chrono::milliseconds(10);
// How long a flush drives the messenger itself while it waits for its replies (yielding the core
// between polls), before it sleeps until the progress thread hands them over: a home that polls
// hot answers within microseconds, and the reply is taken here as soon as it arrives.
constexpr auto kPollWhileWaiting = std::chrono::microseconds(2000);

}  // namespace

// One message's worth of a flush: the caller's operations (their `out` pointers are filled by the
// reply), and the outcome.
struct MessageShards::Request {
  int target = -1;
  std::vector<Op> ops;
  bool done = false;
  Status status;
};

MessageShards::MessageShards(int rank, int size, std::size_t bytes, Messenger& messenger,
                             std::chrono::milliseconds timeout,
                             std::function<bool(int)> peer_failed, std::function<void(int)> give_up)
    : rank_(rank),
      size_(size),
      shard_(bytes / 8 * 8),
      messenger_(messenger),
      timeout_(timeout),
      peer_failed_(std::move(peer_failed)),
      give_up_(std::move(give_up)) {
  messenger_.on(Channel::kShardRequest,
                [this](int from, std::span<const std::byte> body) { on_request(from, body); });
  messenger_.on(Channel::kShardReply,
                [this](int from, std::span<const std::byte> body) { on_reply(from, body); });
}

MessageShards::~MessageShards() = default;

MessageShards::Shard::Shard(std::size_t size) {
  if (size == 0) return;
  void* p = sys::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    LARDER_LOG_WARN(
        "cannot map a directory shard of {} bytes: {}; lookups homed on this rank "
        "read the file system",
        size, log::errno_text(errno));
    return;
  }
  words = static_cast<std::uint64_t*>(p);
  bytes = size;
}

MessageShards::Shard::~Shard() {
  if (words != nullptr && sys::munmap(words, bytes) != 0) {
    LARDER_LOG_WARN("cannot unmap a directory shard: {}", log::errno_text(errno));
  }
}

Status MessageShards::queue(Op op) {
  if (op.target < 0 || op.target >= size_) {
    return {Errc::kInvalidArgument, EINVAL, "no such rank: " + std::to_string(op.target)};
  }
  const bool atomic = op.kind != Kind::kGet && op.kind != Kind::kPut;
  if (op.disp % 8 != 0 || (atomic ? 8 : op.bytes) % 8 != 0 ||
      sizeof(RequestHeader) + request_bytes(op) > kMaxMessage ||
      sizeof(RequestHeader) + reply_bytes(op) > kMaxMessage) {
    return {Errc::kInvalidArgument, EINVAL, "a shard operation must be 8-byte aligned and small"};
  }
  std::lock_guard lock(queued_mu_);
  queued_[std::this_thread::get_id()].push_back(op);
  return {};
}

Status MessageShards::compare_and_swap(int target, std::uint64_t disp, const std::uint64_t* desired,
                                       const std::uint64_t* expected, std::uint64_t* old) {
  return queue(Op{Kind::kCas, target, disp, *desired, *expected, old, nullptr, 0});
}

Status MessageShards::fetch_add(int target, std::uint64_t disp, const std::uint64_t* add,
                                std::uint64_t* old) {
  return queue(Op{Kind::kFetchAdd, target, disp, *add, 0, old, nullptr, 0});
}

Status MessageShards::store(int target, std::uint64_t disp, const std::uint64_t* value) {
  return queue(Op{Kind::kSwap, target, disp, *value, 0, nullptr, nullptr, 0});
}

Status MessageShards::get(int target, std::uint64_t disp, void* into, std::size_t bytes) {
  return queue(Op{Kind::kGet, target, disp, 0, 0, into, nullptr, bytes});
}

Status MessageShards::put(int target, std::uint64_t disp, const void* from, std::size_t bytes) {
  return queue(Op{Kind::kPut, target, disp, 0, 0, nullptr, from, bytes});
}

Status MessageShards::flush(int target) {
  return complete(target, false);
}

Status MessageShards::flush_all() {
  return complete(-1, true);
}

bool MessageShards::apply(std::span<const Op> ops) noexcept {
  const std::size_t shard = shard_.bytes;
  for (const Op& op : ops) {
    const std::size_t span = op.kind == Kind::kGet || op.kind == Kind::kPut ? op.bytes : 8;
    if (op.disp % 8 != 0 || span % 8 != 0 || op.disp > shard || span > shard - op.disp) {
      return false;
    }
  }
  for (const Op& op : ops) {
    std::uint64_t* word = shard_.words + op.disp / 8;
    switch (op.kind) {
      case Kind::kCas: {
        std::uint64_t seen = op.b;
        std::atomic_ref<std::uint64_t>(*word).compare_exchange_strong(seen, op.a);
        std::memcpy(op.out, &seen, 8);
        break;
      }
      case Kind::kFetchAdd: {
        const std::uint64_t old = std::atomic_ref<std::uint64_t>(*word).fetch_add(op.a);
        std::memcpy(op.out, &old, 8);
        break;
      }
      case Kind::kSwap:
        std::atomic_ref<std::uint64_t>(*word).exchange(op.a);
        break;
      case Kind::kGet:
        // Word by word: other threads write these words concurrently (callers validate).
        for (std::size_t i = 0; i < op.bytes / 8; ++i) {
          const std::uint64_t w = std::atomic_ref<std::uint64_t>(word[i]).load();
          std::memcpy(static_cast<std::byte*>(op.out) + 8 * i, &w, 8);
        }
        break;
      case Kind::kPut:
        for (std::size_t i = 0; i < op.bytes / 8; ++i) {
          std::uint64_t w = 0;
          std::memcpy(&w, static_cast<const std::byte*>(op.in) + 8 * i, 8);
          std::atomic_ref<std::uint64_t>(word[i]).store(w);
        }
        break;
    }
  }
  return true;
}

Status MessageShards::complete(int target, bool all) {
  std::vector<Op> mine;
  {
    std::lock_guard lock(queued_mu_);
    auto it = queued_.find(std::this_thread::get_id());
    if (it == queued_.end()) return {};
    std::vector<Op>& q = it->second;
    if (all) {
      mine.swap(q);
    } else {
      auto split = std::stable_partition(q.begin(), q.end(),
                                         [&](const Op& op) { return op.target != target; });
      mine.assign(split, q.end());
      q.erase(split, q.end());
    }
    if (q.empty()) queued_.erase(it);
  }
  if (mine.empty()) return {};
  Status first;
  auto keep = [&first](const Status& s) {
    if (first.ok() && !s.ok()) first = s;
  };
  // Per home, in issue order: this rank's own at once, the others' in messages of at most
  // kMaxMessage bytes each way.
  std::stable_sort(mine.begin(), mine.end(),
                   [](const Op& x, const Op& y) { return x.target < y.target; });
  std::vector<std::unique_ptr<Request>> requests;
  for (std::size_t at = 0; at < mine.size();) {
    const int home = mine[at].target;
    std::size_t end = at;
    while (end < mine.size() && mine[end].target == home) ++end;
    if (home == rank_) {
      if (!apply(std::span(mine.data() + at, end - at))) {
        keep(Status(Errc::kInvalidArgument, EINVAL, "a shard operation out of bounds"));
      }
      at = end;
      continue;
    }
    while (at < end) {
      auto r = std::make_unique<Request>();
      r->target = home;
      std::size_t out = sizeof(RequestHeader);
      std::size_t back = sizeof(RequestHeader);
      while (at < end && out + request_bytes(mine[at]) <= kMaxMessage &&
             back + reply_bytes(mine[at]) <= kMaxMessage) {
        out += request_bytes(mine[at]);
        back += reply_bytes(mine[at]);
        r->ops.push_back(mine[at++]);
      }
      requests.push_back(std::move(r));
    }
  }
  // Registered before sending: a reply may be handled before send() returns.
  std::vector<std::uint64_t> ids(requests.size());
  {
    std::lock_guard lock(mu_);
    for (std::size_t i = 0; i < requests.size(); ++i) {
      ids[i] = next_id_++;
      pending_[ids[i]] = requests[i].get();
    }
  }
  std::vector<std::byte> body;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    Request& r = *requests[i];
    body.clear();
    RequestHeader h;
    h.id = ids[i];
    h.ops = static_cast<std::uint32_t>(r.ops.size());
    const auto* hb = reinterpret_cast<const std::byte*>(&h);
    body.insert(body.end(), hb, hb + sizeof h);
    for (const Op& op : r.ops) {
      OpRecord rec;
      rec.kind = static_cast<std::uint8_t>(op.kind);
      rec.bytes = static_cast<std::uint32_t>(op.bytes);
      rec.disp = op.disp;
      rec.a = op.a;
      rec.b = op.b;
      const auto* rb = reinterpret_cast<const std::byte*>(&rec);
      body.insert(body.end(), rb, rb + sizeof rec);
      if (op.kind == Kind::kPut) {
        const auto* data = static_cast<const std::byte*>(op.in);
        body.insert(body.end(), data, data + op.bytes);
        body.resize(pad8(body.size()));
      }
    }
    Status sent = messenger_.send(r.target, Channel::kShardRequest, body);
    std::lock_guard lock(mu_);
    if (!sent.ok() && !r.done) {
      pending_.erase(ids[i]);
      r.done = true;
      r.status = sent;
    }
    if (sent.ok()) {
      ++requests_sent_;
      operations_sent_ += r.ops.size();
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  const auto poll_until = std::chrono::steady_clock::now() + kPollWhileWaiting;
  std::vector<int> timed_out;
  std::unique_lock lock(mu_);
  for (std::size_t i = 0; i < requests.size(); ++i) {
    Request& r = *requests[i];
    while (!r.done) {
      const auto now = std::chrono::steady_clock::now();
      const bool failed = peer_failed_ && peer_failed_(r.target);
      if (now >= deadline || failed) {
        pending_.erase(ids[i]);  // a late reply finds nothing to write into
        r.done = true;
        if (!failed) timed_out.push_back(r.target);
        r.status =
            failed ? Status(Errc::kTransport, 0, "rank " + std::to_string(r.target) + " has failed")
                   : Status(Errc::kTimeout, ETIMEDOUT,
                            "rank " + std::to_string(r.target) +
                                " did not answer directory operations");
        break;
      }
      if (now < poll_until) {
        lock.unlock();
        const bool worked = messenger_.poll_waiting();
        if (!worked) std::this_thread::yield();
        lock.lock();
        // A messenger that needs no help (UCX's) did nothing: wait for the progress thread.
        if (worked || messenger_.poll_helps()) continue;
      }
      answered_.wait_until(lock, std::min(deadline, now + kFailureCheck));
    }
    keep(r.status);
  }
  lock.unlock();
  if (give_up_) {
    std::sort(timed_out.begin(), timed_out.end());
    timed_out.erase(std::unique(timed_out.begin(), timed_out.end()), timed_out.end());
    for (int home : timed_out) {
      LARDER_LOG_LIMITED(kWarn,
                         "rank {} did not answer directory operations within {} ms; "
                         "treating it as failed",
                         home, timeout_.count());
      give_up_(home);
    }
  }
  return first;
}

void MessageShards::on_request(int from, std::span<const std::byte> body) {
  RequestHeader h;
  if (body.size() < sizeof h) return;
  std::memcpy(&h, body.data(), sizeof h);
  // Decoded into operations on local buffers: gets and old words land in the reply.
  std::vector<Op> ops;
  std::size_t at = sizeof h;
  std::size_t back = sizeof h;
  bool valid = h.ops <= kMaxMessage / sizeof(OpRecord);
  for (std::uint32_t i = 0; valid && i < h.ops; ++i) {
    OpRecord rec;
    if (body.size() - at < sizeof rec) {
      valid = false;
      break;
    }
    std::memcpy(&rec, body.data() + at, sizeof rec);
    at += sizeof rec;
    Op op;
    op.kind = static_cast<Kind>(rec.kind);
    op.disp = rec.disp;
    op.a = rec.a;
    op.b = rec.b;
    op.bytes = rec.bytes;
    if (rec.kind < 1 || rec.kind > 5 || op.bytes > kMaxMessage) {
      valid = false;
      break;
    }
    if (op.kind == Kind::kPut) {
      if (body.size() - at < pad8(op.bytes)) {
        valid = false;
        break;
      }
      op.in = body.data() + at;
      at += pad8(op.bytes);
    }
    back += reply_bytes(op);
    ops.push_back(op);
  }
  valid = valid && back <= kMaxMessage;
  std::vector<std::byte> reply(valid ? back : sizeof h);
  if (valid) {
    std::size_t out = sizeof h;
    for (Op& op : ops) {
      op.out = reply.data() + out;
      out += reply_bytes(op);
    }
    valid = apply(ops);
  }
  h.error = valid ? 0 : EINVAL;
  if (!valid) reply.resize(sizeof h);
  std::memcpy(reply.data(), &h, sizeof h);
  if (Status s = messenger_.send(from, Channel::kShardReply, reply); !s.ok()) {
    LARDER_LOG_LIMITED(kWarn, "cannot answer rank {}'s directory operations: {}", from,
                       s.message());
  }
}

void MessageShards::on_reply(int from, std::span<const std::byte> body) {
  RequestHeader h;
  if (body.size() < sizeof h) return;
  std::memcpy(&h, body.data(), sizeof h);
  {
    std::lock_guard lock(mu_);
    auto it = pending_.find(h.id);
    if (it == pending_.end()) return;  // its flush gave up
    Request& r = *it->second;
    if (r.target != from) return;
    std::size_t need = sizeof h;
    for (const Op& op : r.ops) need += reply_bytes(op);
    if (h.error != 0 || h.ops != r.ops.size() || body.size() < need) {
      r.status = Status(Errc::kInvalidArgument, h.error != 0 ? h.error : EPROTO,
                        "rank " + std::to_string(from) + " refused directory operations");
    } else {
      std::size_t at = sizeof h;
      for (const Op& op : r.ops) {
        const std::size_t n = op.kind == Kind::kGet ? op.bytes : reply_bytes(op);
        if (n > 0) std::memcpy(op.out, body.data() + at, n);
        at += reply_bytes(op);
      }
    }
    r.done = true;
    pending_.erase(it);
  }
  // After the unlock: a waiter woken under the lock would block on it again at once (a second
  // context switch per reply on a busy node).
  answered_.notify_all();
}

std::uint64_t MessageShards::requests_sent() const noexcept {
  std::lock_guard lock(mu_);
  return requests_sent_;
}

std::uint64_t MessageShards::operations_sent() const noexcept {
  std::lock_guard lock(mu_);
  return operations_sent_;
}

}  // namespace larder
