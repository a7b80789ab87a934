#include "runtime/transport/holder_checks.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/common/log.hpp"

namespace larder {
namespace {

// An ask: its header, then an Item per chunk. A verdict: its header, then one byte per chunk in
// the ask's order (1: the chunk passed), padded to 8.
struct Header {
  std::uint64_t id = 0;
  std::uint32_t count = 0;
  std::uint32_t pad = 0;
};
struct Item {
  std::uint32_t tier = 0;
  std::uint32_t segment = 0;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint64_t hash = 0;
};
static_assert(sizeof(Header) == 16 && sizeof(Item) == 32);
constexpr std::size_t kItemsPerAsk = (kMaxMessage - sizeof(Header)) / sizeof(Item);

constexpr auto kFailureCheck = std::chrono::milliseconds(10);

bool asks_about(const Transport::GetOp& op) noexcept {
  return disk_backed(op.tier, op.segment) && op.chunk.length > 0 && op.chunk.hash != 0;
}

}  // namespace

// One ask: the ops it is about (indices into the caller's ops), and their verdicts.
struct HolderChecks::Request {
  int owner = -1;
  std::vector<std::size_t> of;
  std::vector<std::uint8_t> verdicts;
  bool done = false;
  Status status;
};

HolderChecks::HolderChecks(int rank, Messenger& messenger, std::chrono::milliseconds timeout,
                           std::function<bool(int)> peer_failed)
    : rank_(rank), messenger_(messenger), timeout_(timeout), peer_failed_(std::move(peer_failed)) {
  messenger_.on(Channel::kHolderCheck,
                [this](int from, std::span<const std::byte> body) { on_ask(from, body); });
  messenger_.on(Channel::kHolderVerdict,
                [this](int from, std::span<const std::byte> body) { on_verdict(from, body); });
}

void HolderChecks::set_check(Transport::ServeCheck check) {
  std::unique_lock lock(check_mu_);
  check_ = std::move(check);
}

bool HolderChecks::run_check(Tier tier, std::uint32_t segment, const Transport::ChunkOf& chunk) {
  std::shared_lock lock(check_mu_);
  return !check_ || check_(tier, segment, chunk);
}

void HolderChecks::check(std::span<const Transport::GetOp> ops, std::span<Status> out) {
  // Per holder, in messages of at most kItemsPerAsk chunks; this rank's own chunks at once.
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (out[i].ok() && asks_about(ops[i])) order.push_back(i);
  }
  if (order.empty()) return;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t x, std::size_t y) { return ops[x].owner < ops[y].owner; });
  const auto refused = [](int owner) {
    return Status(Errc::kIoError, EBADMSG,
                  "rank " + std::to_string(owner) + " found its copy of the chunk bad");
  };
  std::vector<std::unique_ptr<Request>> requests;
  for (std::size_t at = 0; at < order.size();) {
    const int owner = ops[order[at]].owner;
    if (owner == rank_) {
      const Transport::GetOp& op = ops[order[at]];
      if (!run_check(op.tier, op.segment, op.chunk)) out[order[at]] = refused(owner);
      ++at;
      continue;
    }
    auto r = std::make_unique<Request>();
    r->owner = owner;
    while (at < order.size() && ops[order[at]].owner == owner && r->of.size() < kItemsPerAsk) {
      r->of.push_back(order[at++]);
    }
    requests.push_back(std::move(r));
  }
  // Registered before sending: a verdict may be handled before send() returns.
  std::vector<std::uint64_t> ids(requests.size());
  {
    std::lock_guard lock(mu_);
    for (std::size_t k = 0; k < requests.size(); ++k) {
      ids[k] = next_id_++;
      pending_[ids[k]] = requests[k].get();
    }
  }
  std::vector<std::byte> body;
  for (std::size_t k = 0; k < requests.size(); ++k) {
    Request& r = *requests[k];
    body.assign(sizeof(Header) + r.of.size() * sizeof(Item), std::byte{0});
    Header h;
    h.id = ids[k];
    h.count = static_cast<std::uint32_t>(r.of.size());
    std::memcpy(body.data(), &h, sizeof h);
    for (std::size_t j = 0; j < r.of.size(); ++j) {
      const Transport::GetOp& op = ops[r.of[j]];
      Item item;
      item.tier = static_cast<std::uint32_t>(op.tier);
      item.segment = op.segment;
      item.offset = op.chunk.offset;
      item.length = op.chunk.length;
      item.hash = op.chunk.hash;
      std::memcpy(body.data() + sizeof h + j * sizeof item, &item, sizeof item);
    }
    asked_.fetch_add(r.of.size(), std::memory_order_relaxed);
    Status sent = messenger_.send(r.owner, Channel::kHolderCheck, body);
    if (!sent.ok()) {
      std::lock_guard lock(mu_);
      if (!r.done) {
        pending_.erase(ids[k]);
        r.done = true;
        r.status = sent;
      }
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  std::unique_lock lock(mu_);
  for (std::size_t k = 0; k < requests.size(); ++k) {
    Request& r = *requests[k];
    while (!r.done) {
      const auto now = std::chrono::steady_clock::now();
      const bool failed = peer_failed_ && peer_failed_(r.owner);
      if (now >= deadline || failed) {
        pending_.erase(ids[k]);  // a late verdict finds nothing to write into
        r.done = true;
        r.status =
            failed ? Status(Errc::kTransport, 0, "rank " + std::to_string(r.owner) + " has failed")
                   : Status(Errc::kTimeout, ETIMEDOUT,
                            "rank " + std::to_string(r.owner) +
                                " did not answer whether its disk-tier copies are good");
        if (!failed) {
          LARDER_LOG_LIMITED(kWarn,
                             "rank {} did not check its disk-tier chunks within {} ms; "
                             "they are read from the file system",
                             r.owner, timeout_.count());
        }
        break;
      }
      answered_cv_.wait_until(lock, std::min(deadline, now + kFailureCheck));
    }
    for (std::size_t j = 0; j < r.of.size(); ++j) {
      if (!r.status.ok()) {
        out[r.of[j]] = r.status;
      } else if (r.verdicts[j] == 0) {
        out[r.of[j]] = refused(r.owner);
      }
    }
  }
}

void HolderChecks::on_ask(int from, std::span<const std::byte> body) {
  Header h;
  if (body.size() < sizeof h) return;
  std::memcpy(&h, body.data(), sizeof h);
  if (h.count > kItemsPerAsk || body.size() != sizeof h + h.count * sizeof(Item)) return;
  const std::size_t count = h.count;
  std::vector<std::byte> answer(sizeof h + (count + 7) / 8 * 8, std::byte{0});
  std::memcpy(answer.data(), &h, sizeof h);
  for (std::uint32_t j = 0; j < h.count; ++j) {
    Item item;
    std::memcpy(&item, body.data() + sizeof h + j * sizeof item, sizeof item);
    bool good = true;  // no tier this rank knows of: none of its disks
    if (item.tier <= static_cast<std::uint32_t>(Tier::kFile)) {
      good = run_check(static_cast<Tier>(item.tier), item.segment,
                       Transport::ChunkOf{item.offset, item.length, item.hash});
    }
    answer[sizeof h + j] = std::byte{good ? std::uint8_t{1} : std::uint8_t{0}};
  }
  answered_.fetch_add(h.count, std::memory_order_relaxed);
  // Not answered: the reader times out and reads the PFS.
  if (Status s = messenger_.send(from, Channel::kHolderVerdict, answer); !s.ok()) {
    LARDER_LOG_LIMITED(kWarn, "cannot answer rank {}'s check of disk-tier chunks: {}", from,
                       s.to_string());
  }
}

void HolderChecks::on_verdict(int /*from*/, std::span<const std::byte> body) {
  Header h;
  if (body.size() < sizeof h) return;
  std::memcpy(&h, body.data(), sizeof h);
  {
    std::lock_guard lock(mu_);
    auto it = pending_.find(h.id);
    if (it == pending_.end()) return;  // the reader stopped waiting
    Request& r = *it->second;
    pending_.erase(it);
    if (h.count != r.of.size() || body.size() < sizeof h + h.count) {
      r.status = Status(Errc::kTransport, EPROTO, "a malformed verdict");
    } else {
      r.verdicts.resize(h.count);
      std::memcpy(r.verdicts.data(), body.data() + sizeof h, h.count);
    }
    r.done = true;
  }
  answered_cv_.notify_all();
}

}  // namespace larder
