#include "runtime/agent/agent_server.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "runtime/agent/channel.hpp"
#include "runtime/agent/file_request.hpp"
#include "runtime/api/loader_objects.hpp"
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
  return s.config().any_path() || s.config().lexically_managed(path);
}

Status unavailable(int fd, Op op) {
  return send_message(fd, op, kUnavailable, {});
}

// The '\0'-separated strings of `bytes`.
std::vector<std::string> strings_of(std::span<const std::byte> bytes) {
  std::vector<std::string> out(1);
  for (std::byte b : bytes) {
    if (b == std::byte{0}) {
      out.emplace_back();
    } else {
      out.back().push_back(static_cast<char>(b));
    }
  }
  return out;
}

// The reply to a produce request that failed: its errno, or "unavailable".
Status produce_error(int fd, Op op, const Status& s) {
  if (s.code() == Errc::kUnavailable || s.native_code() == 0) return unavailable(fd, op);
  return send_message(fd, op, static_cast<std::uint32_t>(s.native_code()), {});
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
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  socklen_t len = 0;
  const sockaddr_un addr = agent_address(loader_name(name_), &len);
  if (fd >= 0 && ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0 &&
      ::listen(fd, 64) == 0) {
    loader_fd_ = fd;
    track(fd);
    loader_ = std::thread([this] { loader_loop(); });
  } else {
    LARDER_LOG_INFO("shared objects load from their original paths: no loader socket: {}",
                    log::errno_text(errno));
    if (fd >= 0) sys::close(fd);
  }
}

void AgentServer::loader_loop() {
  mark_runtime_thread();
  std::vector<pollfd> fds{{loader_fd_, POLLIN, 0}};
  std::vector<std::byte> body;
  Connection loader_conn;  // the loader's requests use no slot and claim nothing
  auto drop = [&](std::size_t i) {
    untrack(fds[i].fd);
    sys::close(fds[i].fd);
    fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(i));
  };
  for (;;) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if ((fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) break;  // stop()
    if ((fds[0].revents & POLLIN) != 0) {
      const int fd = ::accept4(loader_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0 && errno != EINTR && errno != ECONNABORTED && errno != EAGAIN) break;
      if (fd >= 0 && check_peer(fd, -1).ok()) {
        track(fd);
        fds.push_back({fd, POLLIN, 0});
      } else if (fd >= 0) {
        sys::close(fd);
      }
    }
    for (std::size_t i = fds.size(); i-- > 1;) {
      if (fds[i].revents == 0) continue;
      Header h;
      if (!recv_exact(fds[i].fd, &h, sizeof h).ok() || h.length > kMaxBody) {
        drop(i);
        continue;
      }
      body.resize(h.length);
      if (h.length > 0 && !recv_exact(fds[i].fd, body.data(), body.size()).ok()) {
        drop(i);
        continue;
      }
      const auto op = static_cast<Op>(h.op);
      Status s;
      try {
        s = op == Op::kLoader || op == Op::kObject ? handle(fds[i].fd, op, body, &loader_conn)
                                                   : unavailable(fds[i].fd, op);
      } catch (...) {
        s = Status(Errc::kInternal, ENOMEM, "loader request failed");
      }
      if (!s.ok()) drop(i);
    }
  }
  while (fds.size() > 1) drop(fds.size() - 1);
}

Status AgentServer::handle(int fd, Op op, const std::vector<std::byte>& body, Connection* conn) {
  int* slot = &conn->slot;
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
      s->stats().add(Counter::worker_lookups);
      // A regular file whose first chunk the node holds already: its place goes with the answer
      // (the worker's open and first read then cost this one round trip).
      if (rec->error == 0 && rec->managed() && rec->meta.is_regular() && rec->meta.size > 0) {
        if (auto known = s->cache().known_place(CachedFile::of(path, *rec), 0)) {
          PlaceReply r;
          r.node_local = 1;
          r.record = *known;
          s->stats().add(Counter::worker_places_sent);
          return send_message(fd, op, 0, bytes_of(*rec), bytes_of(r));
        }
      }
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
      auto place = s->cache().place(file_of(req, path), req.index);
      if (!place.ok()) return unavailable(fd, op);
      s->stats().add(Counter::worker_places);
      PlaceReply r;
      r.node_local = place->node_local ? 1 : 0;
      r.copied = place->copied ? 1 : 0;
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
      s->stats().add(Counter::worker_reads);
      // The worker counts its own read (its stats slot); the rank counts what its cache did.
      auto n = s->cache().read(file_of(req, path), buf, req.offset);
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
      auto name = s->node_file(file_of(req, path));
      if (!name.ok()) return unavailable(fd, op);
      s->stats().add(Counter::node_file_maps_workers);  // of node.file_maps: by workers
      return send_message(fd, op, 0, bytes_of(std::string_view(*name)));
    }
    case Op::kLoader: {
      std::string reply = s->loader_root();
      reply.push_back('\0');
      for (std::size_t i = 0; i < s->config().prefixes.size(); ++i) {
        if (i > 0) reply.push_back(':');
        reply += s->config().prefixes[i];
      }
      return send_message(fd, op, 0, bytes_of(std::string_view(reply)));
    }
    case Op::kObject: {
      std::uint32_t exact = 0;
      std::string name;
      if (!split(body, &exact, &name)) return unavailable(fd, op);
      auto answer = find_object(*s, s->loader_root(), name, exact != 0);
      if (!answer.ok()) {
        s->stats().add(Counter::loader_original);
        return unavailable(fd, op);
      }
      s->stats().add(answer->kind == ObjectKind::kNodeCopy ? Counter::loader_objects
                     : answer->kind == ObjectKind::kAbsent ? Counter::loader_absent
                                                           : Counter::loader_original);
      ObjectReply r;
      r.kind = static_cast<std::uint32_t>(answer->kind);
      r.error = answer->error;
      return send_message(fd, op, 0, bytes_of(r), bytes_of(std::string_view(answer->path)));
    }
    case Op::kProduceClaim: {
      const std::string path(reinterpret_cast<const char*>(body.data()), body.size());
      if (path.empty() || path.front() != '/' || !s->config().produced(path)) {
        return unavailable(fd, op);
      }
      auto canonical = s->produce_claim(path);
      if (!canonical.ok()) return produce_error(fd, op, canonical.status());
      conn->claims[path] = *canonical;
      return send_message(fd, op, 0, bytes_of(std::string_view(*canonical)));
    }
    case Op::kProducePublish: {
      std::uint32_t mode = 0;
      if (body.size() < sizeof mode) return unavailable(fd, op);
      std::memcpy(&mode, body.data(), sizeof mode);
      const auto parts = strings_of(std::span(body).subspan(sizeof mode));
      if (parts.size() != 3 || !s->config().produced(parts[0])) return unavailable(fd, op);
      conn->claims.erase(parts[0]);
      auto record = s->produce_publish(parts[0], parts[1], parts[2], mode);
      if (!record.ok()) return produce_error(fd, op, record.status());
      return send_message(fd, op, 0, bytes_of(*record));
    }
    case Op::kProduceAbandon: {
      const auto parts = strings_of(body);
      if (parts.size() != 2 || !s->config().produced(parts[0])) return unavailable(fd, op);
      conn->claims.erase(parts[0]);
      s->produce_abandon(parts[0], parts[1]);
      return send_message(fd, op, 0, {});
    }
    case Op::kProduceAlias: {
      const auto parts = strings_of(body);
      if (parts.size() != 2 || !s->config().produced(parts[1])) return unavailable(fd, op);
      auto record = s->produce_alias(parts[0], parts[1]);
      if (!record.ok()) return produce_error(fd, op, record.status());
      return send_message(fd, op, 0, bytes_of(*record));
    }
    case Op::kProduceDir:
      return send_message(fd, op, 0, bytes_of(std::string_view(s->produce_dir())));
    case Op::kArena: {
      ArenaRequest req;
      if (body.size() != sizeof req) return unavailable(fd, op);
      std::memcpy(&req, body.data(), sizeof req);
      const Topology& t = s->topology();
      if (req.rank < 0 || req.rank >= t.size || !t.same_node(req.rank, t.rank)) {
        return unavailable(fd, op);
      }
      const std::string path = s->storage_path(req.rank, req.tier, req.segment);
      if (path.empty()) return unavailable(fd, op);
      return send_message(fd, op, 0, bytes_of(std::string_view(path)));
    }
    case Op::kNodeView: {
      const std::string path = s->node_table_path();
      if (path.empty()) return unavailable(fd, op);
      const Topology& t = s->topology();
      std::vector<std::int32_t> ranks;
      for (int r = 0; r < t.size; ++r) {
        if (t.same_node(r, t.rank)) ranks.push_back(r);
      }
      NodeViewReply r;
      r.max_entries = s->config().node_slots;
      r.ranks = static_cast<std::uint32_t>(ranks.size());
      std::string body(reinterpret_cast<const char*>(&r), sizeof r);
      body.append(reinterpret_cast<const char*>(ranks.data()), ranks.size() * sizeof(std::int32_t));
      body += path;
      return send_message(fd, op, 0, bytes_of(std::string_view(body)));
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
  Connection conn;
  std::vector<std::byte> body;
  for (;;) {
    Header h;
    if (!recv_exact(fd, &h, sizeof h).ok() || h.length > kMaxBody) break;
    body.resize(h.length);
    if (h.length > 0 && !recv_exact(fd, body.data(), body.size()).ok()) break;
    Status s;
    try {
      s = handle(fd, static_cast<Op>(h.op), body, &conn);
    } catch (...) {
      s = Status(Errc::kInternal, ENOMEM, "agent request failed");
    }
    if (!s.ok()) break;
  }
  if (Lease lease = Runtime::instance().session()) {
    // The worker is gone (or closed its client): what it was producing will not come.
    for (const auto& [path, canonical] : conn.claims) {
      LARDER_LOG_WARN(
          "a worker that was producing {} is gone; readers get the file system's "
          "answer",
          path);
      lease->produce_abandon(path, canonical);
    }
    // Its counters join the rank's now, or at finalize (fold_worker_stats) when the session is
    // already closing.
    if (conn.slot >= 0) worker_stats_->release(conn.slot, lease->stats());
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
  if (loader_fd_ >= 0) ::shutdown(loader_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  if (loader_.joinable()) loader_.join();
  if (loader_fd_ >= 0) {
    untrack(loader_fd_);
    sys::close(loader_fd_);
  }
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

StatsSnapshot AgentServer::stats_with_workers(const Stats& rank) noexcept {
  WorkerStatsFile* file = nullptr;
  {
    std::lock_guard lock(mu_);  // start() may be setting it (the session is published first)
    file = worker_stats_.get();
  }
  return file != nullptr ? file->with_live(rank) : rank.snapshot();
}

void AgentServer::close_in_child() noexcept {
  for (auto& slot : open_) {
    const int fd = slot.exchange(-1, std::memory_order_relaxed);
    if (fd >= 0) sys::close(fd);
  }
}

}  // namespace larder::agent
