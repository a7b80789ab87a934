// AgentServer: the rank's side of the node-local channel. Serves the rank's worker processes
// (forked or spawned children that must not call MPI) from the rank's running session: metadata,
// listings, where chunks sit in this node's arenas, and inline bytes for everything else.
//
// listen() binds the abstract name before anything else happens, so the name can be handed to
// children (LARDER_AGENT) before the runtime is up; connections made early wait in the backlog
// until start(). One thread accepts, one thread serves each connection (workers are few).
//
// The dynamic loader's audit module (runtime/audit) asks from inside the loader, which holds
// the locks that creating a thread takes: its requests (kLoader, kObject) go to a second name,
// `<name>-loader`, bound by start() and served by one thread that exists before any such
// request and serves every loader connection itself (poll), never starting a thread.
#ifndef LARDER_RUNTIME_AGENT_AGENT_SERVER_HPP_
#define LARDER_RUNTIME_AGENT_AGENT_SERVER_HPP_

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/agent/protocol.hpp"
#include "runtime/agent/worker_stats.hpp"
#include "runtime/common/status.hpp"
#include "runtime/stats/stats.hpp"

namespace larder::agent {

class AgentServer {
 public:
  static Result<std::unique_ptr<AgentServer>> listen(const std::string& name);
  AgentServer(const AgentServer&) = delete;
  AgentServer& operator=(const AgentServer&) = delete;
  ~AgentServer();

  const std::string& name() const noexcept { return name_; }
  // The session is running: creates the workers' stats file in `stats_path` and serves.
  void start(const std::string& stats_path);
  // The name the loader's audit module connects to.
  static std::string loader_name(const std::string& agent_name) { return agent_name + "-loader"; }
  // Closes the listener and every connection (clients fall back to the file system) and joins.
  void stop() noexcept;
  // After stop(): adds the counters of the workers still alive to `into`.
  void fold_worker_stats(Stats& into) noexcept;
  // The rank's counters so far with its workers' still in their slots (larder_stats_json):
  // a worker's counters join the rank's only when its connection ends, which the agent learns
  // some time after the worker exits.
  StatsSnapshot stats_with_workers(const Stats& rank) noexcept;
  // In a child after fork: closes this process's copies of the sockets. Async-signal-safe.
  void close_in_child() noexcept;

 private:
  static constexpr int kMaxTracked = 256;
  AgentServer(std::string name, int fd);
  void accept_loop();
  void serve(int fd);
  void loader_loop();
  // What the agent keeps per worker connection: its stats slot (set by kHello) and the paths it
  // claimed to produce and has not published (given up when the worker goes: a producer that
  // died never leaves readers waiting for it).
  struct Connection {
    int slot = -1;
    std::map<std::string, std::string> claims;  // path -> canonical name
  };
  // One request on a connection.
  Status handle(int fd, Op op, const std::vector<std::byte>& body, Connection* conn);
  void track(int fd) noexcept;
  void untrack(int fd) noexcept;

  const std::string name_;
  const int listen_fd_;
  std::thread acceptor_;
  int loader_fd_ = -1;  // set by start(); -1: no loader socket
  std::thread loader_;
  std::unique_ptr<WorkerStatsFile> worker_stats_;  // set by start(), before any serve thread
  std::mutex mu_;
  bool stopping_ = false;                             // guarded by mu_
  std::vector<std::pair<int, std::thread>> conns_;    // guarded by mu_
  std::array<std::atomic<int>, kMaxTracked> open_{};  // relaxed: fds to close after fork
};

}  // namespace larder::agent

#endif  // LARDER_RUNTIME_AGENT_AGENT_SERVER_HPP_
