#include "runtime/agent/agent_client.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "runtime/agent/channel.hpp"
#include "runtime/agent/file_request.hpp"
#include "runtime/chunk/chunk_math.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"
#include "runtime/tier/segments.hpp"

namespace larder::agent {
namespace {

constexpr std::uint64_t kFlushEvery = 256;  // reads between two counter messages

Status broken() {
  return {Errc::kUnavailable, EPIPE, "the rank's agent is gone"};
}

}  // namespace

Result<std::unique_ptr<AgentClient>> AgentClient::connect(const std::string& name, Config config) {
  const int pid = agent_pid(name);
  if (pid < 0) return invalid_argument("LARDER_AGENT='" + name + "' is not an agent name");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return from_errno(errno, "cannot create a socket for the agent channel");
  socklen_t len = 0;
  const sockaddr_un addr = agent_address(name, &len);
  int rc;
  do {
    rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), len);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    sys::close(fd);
    return from_errno(err, "cannot connect to agent " + name);
  }
  if (Status s = check_peer(fd, pid); !s.ok()) {
    sys::close(fd);
    return s;
  }
  const std::uint32_t version = kVersion;
  Header h;
  HelloReply hello;
  Status s = send_message(fd, Op::kHello, 0, bytes_of(version));
  if (s.ok()) s = recv_exact(fd, &h, sizeof h);
  if (s.ok() && (h.status != 0 || h.length < sizeof hello || h.length > sizeof hello + 4096)) {
    s = Status(Errc::kUnavailable, 0, "the rank's agent has no running cache");
  }
  if (s.ok()) s = recv_exact(fd, &hello, sizeof hello);
  std::string stats_path(h.length - std::min<std::uint64_t>(h.length, sizeof hello), '\0');
  if (s.ok() && !stats_path.empty()) s = recv_exact(fd, stats_path.data(), stats_path.size());
  if (!s.ok()) {
    sys::close(fd);
    return s;
  }
  std::unique_ptr<WorkerStatsFile> stats_file;
  if (hello.stats_slot >= 0 && !stats_path.empty()) {
    auto attached = WorkerStatsFile::attach(stats_path);
    if (attached.ok()) {
      stats_file = std::move(*attached);
    } else {
      LARDER_LOG_DEBUG("counting privately: {}", attached.status().message());
    }
  }
  return std::unique_ptr<AgentClient>(new AgentClient(fd, std::move(config), hello.rank,
                                                      hello.chunk_size, std::move(stats_file),
                                                      hello.stats_slot));
}

AgentClient::AgentClient(int fd, Config config, int rank, std::uint64_t chunk_size,
                         std::unique_ptr<WorkerStatsFile> stats_file, int stats_slot)
    : fd_(fd),
      config_(std::move(config)),
      rank_(rank),
      chunk_size_(chunk_size),
      arenas_([this](int r, Tier tier, std::uint32_t segment) -> std::string {
        ArenaRequest req;
        req.rank = r;
        req.tier = tier;
        req.segment = segment;
        auto reply = call(Op::kArena, bytes_of(req), {});
        if (!reply.ok() || reply->status != 0) return {};
        return {reinterpret_cast<const char*>(reply->body.data()), reply->body.size()};
      }),
      stats_file_(std::move(stats_file)) {
  if (stats_file_ != nullptr) shared_stats_ = stats_file_->slot(stats_slot);
}

AgentClient::~AgentClient() {
  flush_stats();
  const int fd = fd_.exchange(-1);
  if (fd >= 0) sys::close(fd);
}

void AgentClient::abandon_in_child() noexcept {
  const int fd = fd_.exchange(-1, std::memory_order_relaxed);
  if (fd >= 0) sys::close(fd);
}

Result<AgentClient::Reply> AgentClient::call(Op op, std::span<const std::byte> a,
                                             std::span<const std::byte> b) {
  std::lock_guard lock(call_mu_);
  const int fd = fd_.load(std::memory_order_relaxed);
  if (fd < 0) return broken();
  Reply reply;
  Header h;
  Status s = send_message(fd, op, 0, a, b);
  if (s.ok()) s = recv_exact(fd, &h, sizeof h);
  if (s.ok() && (h.op != static_cast<std::uint32_t>(op) || h.length > kMaxBody)) {
    s = Status(Errc::kInternal, EPROTO, "unexpected reply on the agent channel");
  }
  if (s.ok()) {
    reply.status = h.status;
    reply.body.resize(h.length);
    if (h.length > 0) s = recv_exact(fd, reply.body.data(), reply.body.size());
  }
  if (!s.ok()) {
    LARDER_LOG_DEBUG("agent channel closed ({}); reading the file system directly", s.message());
    if (fd_.exchange(-1) >= 0) sys::close(fd);
    return broken();
  }
  return reply;
}

namespace {

// '\0'-joined strings, as the produce requests carry them.
std::string joined(std::initializer_list<std::string_view> parts) {
  std::string out;
  bool first = true;
  for (std::string_view p : parts) {
    if (!first) out.push_back('\0');
    out.append(p);
    first = false;
  }
  return out;
}

// A produce reply's error: its errno, or "unavailable" (the caller writes to the PFS).
Status produce_status(std::uint32_t status, const char* what) {
  if (status == kUnavailable) return {Errc::kUnavailable, 0, "the agent cannot answer"};
  return {Errc::kIoError, static_cast<int>(status), what};
}

Result<PathRecord> record_of(std::uint32_t status, const std::vector<std::byte>& body,
                             const char* what) {
  if (status != 0) return produce_status(status, what);
  if (body.size() != sizeof(PathRecord)) return produce_status(kUnavailable, what);
  PathRecord rec;
  std::memcpy(&rec, body.data(), sizeof rec);
  return rec;
}

}  // namespace

Result<std::string> AgentClient::produce_claim(const std::string& path) {
  auto reply = call(Op::kProduceClaim, bytes_of(std::string_view(path)), {});
  if (!reply.ok()) return reply.status();
  if (reply->status != 0) return produce_status(reply->status, "cannot produce the file");
  return std::string(reinterpret_cast<const char*>(reply->body.data()), reply->body.size());
}

Result<PathRecord> AgentClient::produce_publish(const std::string& path,
                                                const std::string& canonical,
                                                const std::string& staging, std::uint32_t mode) {
  const std::string parts = joined({path, canonical, staging});
  auto reply = call(Op::kProducePublish, bytes_of(mode), bytes_of(std::string_view(parts)));
  if (!reply.ok()) return reply.status();
  return record_of(reply->status, reply->body, "cannot publish the file");
}

void AgentClient::produce_abandon(const std::string& path, const std::string& canonical) {
  const std::string parts = joined({path, canonical});
  (void)call(Op::kProduceAbandon, bytes_of(std::string_view(parts)), {});
}

Result<PathRecord> AgentClient::produce_alias(const std::string& from, const std::string& to) {
  const std::string parts = joined({from, to});
  auto reply = call(Op::kProduceAlias, bytes_of(std::string_view(parts)), {});
  if (!reply.ok()) return reply.status();
  return record_of(reply->status, reply->body, "cannot rename the file");
}

std::string AgentClient::produce_dir() {
  auto reply = call(Op::kProduceDir, {}, {});
  if (!reply.ok() || reply->status != 0) return {};
  return {reinterpret_cast<const char*>(reply->body.data()), reply->body.size()};
}

bool AgentClient::stale(std::int64_t checked_s) const noexcept {
  if (config_.revalidate.count() == 0) return false;
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) - checked_s >= config_.revalidate.count();
}

Result<PathRecord> AgentClient::lookup_kind(const std::string& path, bool follow) {
  auto& memo = follow ? paths_ : links_;
  {
    std::shared_lock lock(memo_mu_);
    if (auto it = memo.find(path); it != memo.end() && !stale(it->second.checked_s)) {
      return it->second;
    }
  }
  // The node's answer, found in its table: no message (a DataLoader's worker opens each file
  // once per epoch; a message per file cost more than the file's plain read).
  if (NodeView* view = node_view(); view != nullptr && fd_.load(std::memory_order_relaxed) >= 0) {
    if (auto found = view->path(path, follow)) {
      stats().add(Counter::worker_answers_found);
      return *found;
    }
  }
  const std::uint8_t flag = follow ? 1 : 0;
  auto reply = call(Op::kLookup, bytes_of(flag), bytes_of(std::string_view(path)));
  if (!reply.ok()) return reply.status();
  if (reply->status != 0 || (reply->body.size() != sizeof(PathRecord) &&
                             reply->body.size() != sizeof(PathRecord) + sizeof(PlaceReply))) {
    return Status(Errc::kUnavailable, 0, "the agent cannot answer");
  }
  PathRecord rec;
  std::memcpy(&rec, reply->body.data(), sizeof rec);
  std::unique_lock lock(memo_mu_);
  memo.insert_or_assign(path, rec);
  if (reply->body.size() > sizeof rec) {
    // The place of the file's first chunk on this node, sent with the answer (kLookup).
    PlaceReply place;
    std::memcpy(&place, reply->body.data() + sizeof rec, sizeof place);
    if (place.node_local != 0) places_.insert_or_assign(chunk_key(rec.file, 0), place.record);
  }
  return rec;
}

Result<PathRecord> AgentClient::lookup(const std::string& path) {
  return lookup_kind(path, true);
}

Result<PathRecord> AgentClient::lookup_link(const std::string& path) {
  return lookup_kind(path, false);
}

Result<std::shared_ptr<const Listing>> AgentClient::list(const std::string& path) {
  {
    std::shared_lock lock(memo_mu_);
    if (auto it = lists_.find(path); it != lists_.end() && !stale(it->second.fetched_s)) {
      return it->second.listing;
    }
  }
  auto reply = call(Op::kList, bytes_of(std::string_view(path)), {});
  if (!reply.ok()) return reply.status();
  ListReply head;
  if (reply->status != 0 || reply->body.size() < sizeof head) {
    return Status(Errc::kUnavailable, 0, "the agent cannot answer");
  }
  std::memcpy(&head, reply->body.data(), sizeof head);
  auto listing = std::make_shared<Listing>();
  if (head.error != 0) {
    listing->error = head.error;
  } else if (!listing->adopt(
                 std::vector<std::byte>(reply->body.begin() + sizeof head, reply->body.end())) ||
             listing->count != head.count) {
    return Status(Errc::kInternal, EPROTO, "malformed listing from the agent");
  }
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  std::unique_lock lock(memo_mu_);
  lists_.insert_or_assign(path, KnownListing{listing, static_cast<std::int64_t>(now.tv_sec)});
  return std::shared_ptr<const Listing>(std::move(listing));
}

bool AgentClient::copy_local(const CachedFile& file, std::uint64_t index,
                             std::uint64_t offset_in_chunk, std::span<std::byte> into) {
  const Key key = chunk_key(file.id, index);
  ChunkRecord rec;
  bool known = false;
  bool copied = false;  // this request brought it from another node: a remote hit
  bool asked = false;   // the rank placed it for this read (and counted prefetch.ready)
  {
    std::shared_lock lock(memo_mu_);
    // A place of another version of the file (it changed during the job) is asked for again.
    if (auto it = places_.find(key); it != places_.end() && it->second.version == file.version) {
      rec = it->second;
      known = true;
    }
  }
  NodeView* view = node_view();
  if (!known && view != nullptr) {
    if (auto found = view->chunk(file, index)) {  // the node holds it: no message
      rec = *found;
      known = true;
      stats().add(Counter::worker_places_found);
    }
  }
  if (!known) {
    FileRequest req = request_of(file);
    req.index = index;
    auto reply = call(Op::kPlace, bytes_of(req), bytes_of(std::string_view(file.path)));
    PlaceReply place;
    if (!reply.ok() || reply->status != 0 || reply->body.size() != sizeof place) return false;
    std::memcpy(&place, reply->body.data(), sizeof place);
    if (place.node_local == 0) return false;
    rec = place.record;
    copied = place.copied != 0;
    asked = true;
    // A kept file the rank placed a chunk of is used in this step: its chunks are the view's too.
    if (view != nullptr && rec.tier == Tier::kFile) view->kept_file_known(rec.segment);
    std::unique_lock lock(memo_mu_);
    places_.insert_or_assign(key, rec);
  }
  if (offset_in_chunk + into.size() > rec.length) return false;
  auto arena = arenas_.get(rec.owner, rec.tier, rec.segment);
  if (!arena.ok() || rec.offset + offset_in_chunk + into.size() > (*arena)->capacity()) {
    return false;
  }
  // A disk-tier chunk (this job's disk tier, or a kept disk-tier file) whose pages are not in
  // memory would be read from the device now: the rank reads it instead, checked against its
  // hash first (Cache::disk_checked). So does one with a check under way on the node, or on a
  // node whose disk tier failed a check: the worker asks about the pages before it reads the
  // words, as the ranks do, so pages in memory only because a failing check brought them in are
  // never read unchecked.
  if (disk_backed(rec.tier, rec.segment) && rec.hash != 0 && config_.verify) {
    if (rec.offset + rec.length > (*arena)->capacity() ||
        !pages_resident({(*arena)->data() + rec.offset, rec.length})) {
      return false;
    }
    if (view == nullptr || view->node_word(NodeTable::kDiskChecking) != 0 ||
        view->node_word(NodeTable::kDiskSuspect) != 0) {
      return false;
    }
  }
  copy_out(**arena, rec.offset + offset_in_chunk, into, !disk_backed(rec.tier, rec.segment));
  stats().add(copied ? Counter::hits_remote : Counter::hits_node);
  stats().add(rec.tier == Tier::kDisk ? Counter::hits_disk : Counter::hits_mem);
  if (rec.ahead != 0 && !asked) stats().add(Counter::prefetch_ready);
  if (rec.mark != 0 && view != nullptr) view->use_mark(rec.mark);
  stats().add(copied ? Counter::served_remote_bytes : Counter::served_node_bytes, into.size());
  if (rec.tier == Tier::kDisk) stats().add(Counter::served_disk_bytes, into.size());
  return true;
}

void AgentClient::copy_out(const Arena& arena, std::uint64_t offset, std::span<std::byte> into,
                           bool in_memory) {
  // A worker reads each file once, and the DataLoader starts new workers every epoch: through
  // the mapping every page would fault in first (a page-table entry per 4 KiB page, each a trap,
  // costing more than the copy). pread copies from the same pages without mapping them, as the
  // page cache serves a plain read. Disk-tier chunks were just checked resident through the
  // mapping, and are copied from it.
  if (in_memory && arena.fd() >= 0 &&
      sys::pread_full(arena.fd(), into.data(), into.size(), static_cast<off_t>(offset)) ==
          static_cast<ssize_t>(into.size())) {
    return;
  }
  // A failed or short read (never for a live arena): the mapping's bytes, as before.
  std::memcpy(into.data(), arena.data() + offset, into.size());
}

NodeView* AgentClient::node_view() {
  std::call_once(view_once_, [this] {
    auto reply = call(Op::kNodeView, {}, {});
    NodeViewReply head;
    if (!reply.ok() || reply->status != 0 || reply->body.size() < sizeof head) return;
    std::memcpy(&head, reply->body.data(), sizeof head);
    const std::size_t ranks_bytes = std::size_t{head.ranks} * sizeof(std::int32_t);
    if (reply->body.size() <= sizeof head + ranks_bytes) return;
    std::vector<int> ranks(head.ranks);
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      std::int32_t r = 0;
      std::memcpy(&r, reply->body.data() + sizeof head + i * sizeof r, sizeof r);
      ranks[i] = r;
    }
    const std::string path(
        reinterpret_cast<const char*>(reply->body.data()) + sizeof head + ranks_bytes,
        reply->body.size() - sizeof head - ranks_bytes);
    auto view = NodeView::open(path, head.max_entries, std::move(ranks), config_);
    if (view.ok()) {
      view_ = std::move(*view);
    } else {
      LARDER_LOG_DEBUG("every answer is asked of the rank: {}", view.status().message());
    }
  });
  return view_.get();
}

Result<std::string> AgentClient::node_file(const CachedFile& file) {
  if (fd_.load(std::memory_order_relaxed) < 0) return broken();
  const FileRequest req = request_of(file);
  auto reply = call(Op::kNodeFile, bytes_of(req), bytes_of(std::string_view(file.path)));
  if (!reply.ok()) return reply.status();
  if (reply->status != 0 || reply->body.empty()) {
    return Status(Errc::kUnavailable, 0, "the agent has no node file for " + file.path);
  }
  return std::string(reinterpret_cast<const char*>(reply->body.data()), reply->body.size());
}

Result<std::size_t> AgentClient::read_inline(const CachedFile& file, std::uint64_t offset,
                                             std::span<std::byte> into) {
  FileRequest req = request_of(file);
  req.offset = offset;
  req.length = into.size();
  auto reply = call(Op::kRead, bytes_of(req), bytes_of(std::string_view(file.path)));
  if (!reply.ok()) return reply.status();
  if (reply->status == kUnavailable) return Status(Errc::kUnavailable, 0, "agent cannot read");
  if (reply->status != 0) {
    const int err = static_cast<int>(reply->status);
    return Status(Errc::kIoError, err, "read of " + file.path + " failed");
  }
  const std::size_t n = std::min(reply->body.size(), into.size());
  std::memcpy(into.data(), reply->body.data(), n);
  return n;
}

Result<std::size_t> AgentClient::read(const CachedFile& file, std::span<std::byte> into,
                                      std::uint64_t offset) {
  if (fd_.load(std::memory_order_relaxed) < 0) return broken();
  const auto start = std::chrono::steady_clock::now();
  const ChunkGeometry geometry{file.size, chunk_size_};
  std::size_t total = 0;
  Status error;
  for_each_piece(geometry, offset, into.size(), [&](const ChunkPiece& piece) {
    auto dst = into.subspan(piece.offset_in_buffer, piece.length);
    if (copy_local(file, piece.index, piece.offset_in_chunk, dst)) {
      total += dst.size();
      return true;
    }
    auto n = read_inline(file, piece.index * chunk_size_ + piece.offset_in_chunk, dst);
    if (!n.ok()) {
      error = n.status();
      return false;
    }
    total += *n;
    return *n == dst.size();
  });
  if (!error.ok() && total == 0) return error;
  stats().record_app_read(total, start);
  maybe_flush();
  return total;
}

void AgentClient::maybe_flush() noexcept {
  if (shared_stats_ != nullptr) return;  // the rank reads the slot
  if (reads_since_flush_.fetch_add(1, std::memory_order_relaxed) + 1 >= kFlushEvery) {
    reads_since_flush_.store(0, std::memory_order_relaxed);
    flush_stats();
  }
}

void AgentClient::flush_stats() noexcept {
  if (shared_stats_ != nullptr) return;  // the rank reads the slot
  try {
    const StatsSnapshot now = own_stats_.snapshot();
    std::lock_guard lock(call_mu_);
    const int fd = fd_.load(std::memory_order_relaxed);
    if (fd < 0) return;
    std::array<std::uint64_t, kCounterCount> delta{};
    bool any = false;
    for (int i = 0; i < kCounterCount; ++i) {
      delta[static_cast<std::size_t>(i)] = now.counters[i] - sent_.counters[i];
      any = any || delta[static_cast<std::size_t>(i)] != 0;
    }
    if (!any) return;
    if (send_message(fd, Op::kStats, 0,
                     {reinterpret_cast<const std::byte*>(delta.data()), sizeof delta})
            .ok()) {
      sent_ = now;
    }
  } catch (...) {
  }
}

}  // namespace larder::agent
