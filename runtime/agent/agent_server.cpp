#include "runtime/agent/agent_server.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "runtime/agent/channel.hpp"
#include "runtime/api/reentry.hpp"
#include "runtime/api/runtime.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"

namespace larder::agent {
namespace {

// Decodes a request body "T then path".
template <class T>
bool split(const std::vector<std::byte>& body, T* head, std::string* path) {
  if (body.size() < sizeof(T)) return false;
  std::memcpy(head, body.data(), sizeof(T));
  path->assign(reinterpret_cast<const char*>(body.data()) + sizeof(T), body.size() - sizeof(T));
  return !path->empty() && path->front() == '/';
}

bool allowed(const Session& s, const std::string& path) {
  return s.config().prefixes.empty() || s.config().lexically_managed(path);
}

Status unavailable(int fd, Op op) {
  return send_message(fd, op, kUnavailable, {});
}

}  // namespace

Result<std::unique_ptr<AgentServer>> AgentServer::listen(const std::string& name) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return from_errno(errno, "cannot create the agent socket");
  socklen_t len = 0;
  const sockaddr_un addr = agent_address(name, &len);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) != 0 || ::listen(fd, 64) != 0) {
    const int err = errno;
    sys::close(fd);
    return from_errno(err, "cannot listen on agent socket " + name);
  }
  return std::unique_ptr<AgentServer>(new AgentServer(name, fd));
}

AgentServer::AgentServer(std::string name, int fd) : name_(std::move(name)), listen_fd_(fd) {
  for (auto& slot : open_) slot.store(-1, std::memory_order_relaxed);
  track(fd);
}

AgentServer::~AgentServer() {
  stop();
}

void AgentServer::track(int fd) noexcept {
  for (auto& slot : open_) {
    int expected = -1;
    if (slot.compare_exchange_strong(expected, fd, std::memory_order_relaxed)) return;
  }
}

void AgentServer::untrack(int fd) noexcept {
  for (auto& slot : open_) {
    int expected = fd;
    if (slot.compare_exchange_strong(expected, -1, std::memory_order_relaxed)) return;
  }
}

void AgentServer::start(const std::string& stats_path) {
  std::lock_guard lock(mu_);
  if (acceptor_.joinable() || stopping_) return;
  auto file = WorkerStatsFile::create(stats_path);
  if (file.ok()) {
    worker_stats_ = std::move(*file);
  } else {
    LARDER_LOG_INFO("workers send their counters at exit instead: {}", file.status().message());
  }
  acceptor_ = std::thread([this] { accept_loop(); });
}

Status AgentServer::handle(int fd, Op op, const std::vector<std::byte>& body, int* slot) {
  Lease s = Runtime::instance().session();  // held for the request: finalize waits for it
  if (!s) return unavailable(fd, op);
  switch (op) {
    case Op::kHello: {
      HelloReply r;
      r.rank = s->topology().rank;
      r.chunk_size = s->config().chunk_size;
      if (worker_stats_ != nullptr && *slot < 0) *slot = worker_stats_->claim();
      r.stats_slot = *slot;
      const std::string_view path = *slot >= 0 ? std::string_view(worker_stats_->path()) : "";
      return send_message(fd, op, 0, bytes_of(r), bytes_of(path));
    }
    case Op::kLookup: {
      std::uint8_t follow = 0;
      std::string path;
      if (!split(body, &follow, &path) || !allowed(*s, path)) return unavailable(fd, op);
      auto rec = follow != 0 ? s->lookup(path) : s->lookup_link(path);
      if (!rec.ok()) return unavailable(fd, op);
      return send_message(fd, op, 0, bytes_of(*rec));
    }
    case Op::kList: {
      std::string path(reinterpret_cast<const char*>(body.data()), body.size());
      if (path.empty() || path.front() != '/' || !allowed(*s, path)) return unavailable(fd, op);
      auto listing = s->list(path);
      if (!listing.ok()) return unavailable(fd, op);
      ListReply r;
      r.error = (*listing)->error;
      r.count = (*listing)->count;
      return send_message(fd, op, 0, bytes_of(r), (*listing)->records);
    }
    case Op::kPlace: {
      FileRequest req;
      std::string path;
      if (!split(body, &req, &path) || !allowed(*s, path)) return unavailable(fd, op);
      auto place = s->cache().place(CachedFile{path, req.file, req.size, req.version}, req.index);
      if (!place.ok()) return unavailable(fd, op);
      PlaceReply r;
      r.node_local = place->node_local ? 1 : 0;
      r.record = place->record;
      return send_message(fd, op, 0, bytes_of(r));
    }
    case Op::kRead: {
      FileRequest req;
      std::string path;
      if (!split(body, &req, &path) || !allowed(*s, path) || req.length > kMaxBody) {
        return unavailable(fd, op);
      }
      std::vector<std::byte> buf(req.length);
      // The worker counts its own read (its stats slot); the rank counts what its cache did.
      auto n = s->cache().read(CachedFile{path, req.file, req.size, req.version}, buf, req.offset);
      if (!n.ok()) {
        if (n.status().code() == Errc::kUnavailable) return unavailable(fd, op);
        const int err = n.status().native_code() != 0 ? n.status().native_code() : EIO;
        return send_message(fd, op, static_cast<std::uint32_t>(err), {});
      }
      return send_message(fd, op, 0, std::span<const std::byte>(buf.data(), *n));
    }
    case Op::kNodeFile: {
      FileRequest req;
      std::string path;
      if (!split(body, &req, &path) || !allowed(*s, path)) return unavailable(fd, op);
      auto name = s->node_file(CachedFile{path, req.file, req.size, req.version});
      if (!name.ok()) return unavailable(fd, op);
      return send_message(fd, op, 0, bytes_of(std::string_view(*name)));
    }
    case Op::kArena: {
      ArenaRequest req;
      if (body.size() != sizeof req) return unavailable(fd, op);
      std::memcpy(&req, body.data(), sizeof req);
      const Topology& t = s->topology();
      if (req.rank < 0 || req.rank >= t.size || !t.same_node(req.rank, t.rank)) {
        return unavailable(fd, op);
      }
      return send_message(fd, op, 0,
                          bytes_of(std::string_view(s->job_dir().arena_path(req.rank, req.tier))));
    }
    case Op::kStats: {
      const std::size_t n = std::min<std::size_t>(body.size() / 8, kCounterCount);
      for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t v = 0;
        std::memcpy(&v, body.data() + i * 8, 8);
        if (v != 0) s->stats().add(static_cast<Counter>(i), v);
      }
      return {};
    }
  }
  return unavailable(fd, op);
}

void AgentServer::accept_loop() {
  mark_runtime_thread();
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // shut down by stop()
    }
    if (Status s = check_peer(fd, -1); !s.ok()) {
      LARDER_LOG_WARN("agent refused a connection: {}", s.message());
      sys::close(fd);
      continue;
    }
    std::lock_guard lock(mu_);
    if (stopping_) {
      sys::close(fd);
      return;
    }
    // Reap the threads of connections that ended.
    for (auto it = conns_.begin(); it != conns_.end();) {
      if (it->first < 0) {
        it->second.join();
        it = conns_.erase(it);
      } else {
        ++it;
      }
    }
    track(fd);
    conns_.emplace_back(fd, std::thread([this, fd] { serve(fd); }));
  }
}

void AgentServer::serve(int fd) {
  mark_runtime_thread();
  int slot = -1;  // this connection's worker stats slot
  std::vector<std::byte> body;
  for (;;) {
    Header h;
    if (!recv_exact(fd, &h, sizeof h).ok() || h.length > kMaxBody) break;
    body.resize(h.length);
    if (h.length > 0 && !recv_exact(fd, body.data(), body.size()).ok()) break;
    Status s;
    try {
      s = handle(fd, static_cast<Op>(h.op), body, &slot);
    } catch (...) {
      s = Status(Errc::kInternal, ENOMEM, "agent request failed");
    }
    if (!s.ok()) break;
  }
  if (slot >= 0) {
    // The worker is gone (or closed its client): its counters join the rank's now, or at
    // finalize (fold_worker_stats) when the session is already closing.
    if (Lease lease = Runtime::instance().session()) worker_stats_->release(slot, lease->stats());
  }
  std::lock_guard lock(mu_);
  if (stopping_) return;  // stop() closes it
  for (auto& conn : conns_) {
    if (conn.first == fd) conn.first = -1;
  }
  untrack(fd);
  sys::close(fd);
}

void AgentServer::stop() noexcept {
  std::vector<std::pair<int, std::thread>> conns;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    ::shutdown(listen_fd_, SHUT_RDWR);
    for (auto& [fd, thread] : conns_) {
      if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
    }
    conns = std::move(conns_);
  }
  if (acceptor_.joinable()) acceptor_.join();
  for (auto& [fd, thread] : conns) {
    if (thread.joinable()) thread.join();
    if (fd >= 0) {
      untrack(fd);
      sys::close(fd);
    }
  }
  untrack(listen_fd_);
  sys::close(listen_fd_);
}

void AgentServer::fold_worker_stats(Stats& into) noexcept {
  if (worker_stats_ != nullptr) worker_stats_->release_all(into);
}

void AgentServer::close_in_child() noexcept {
  for (auto& slot : open_) {
    const int fd = slot.exchange(-1, std::memory_order_relaxed);
    if (fd >= 0) sys::close(fd);
  }
}

}  // namespace larder::agent
