#include "runtime/api/runtime.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <string_view>

#include "mpi_transport/mpi_job.hpp"
#include "runtime/agent/agent_client.hpp"
#include "runtime/agent/agent_server.hpp"
#include "runtime/agent/protocol.hpp"
#include "runtime/api/produce_ops.hpp"
#include "runtime/common/log.hpp"

namespace larder {

Lease& Lease::operator=(Lease&& other) noexcept {
  if (this != &other) {
    if (session_ != nullptr) session_->release_lease();
    session_ = std::move(other.session_);
  }
  return *this;
}

Lease::~Lease() {
  if (session_ != nullptr) session_->release_lease();
}

std::atomic<Runtime*>& Runtime::slot() noexcept {
  static std::atomic<Runtime*> runtime{nullptr};  // constant-initialized: no guard
  return runtime;
}

Runtime& Runtime::instance() noexcept {
  if (Runtime* r = slot().load(std::memory_order_acquire)) return *r;
  // NOLINTNEXTLINE(bugprone-unhandled-exception-at-new): no memory for it ends the process
  static auto* const runtime = new Runtime();  // never deleted: see the header
  slot().store(runtime, std::memory_order_release);
  return *runtime;
}

namespace {

// LARDER_PREFIX directories left to their node-local file system (LARDER_LOCAL_FS=bypass): said
// once for the job, by the process that is rank 0 (or has no rank), not by its workers.
void tell_local_prefixes(const Config& c) {
  if (c.local_prefixes.empty() || std::getenv(agent::kEnvName) != nullptr) return;
  for (const char* var : {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"}) {
    const char* rank = std::getenv(var);
    if (rank != nullptr && std::string_view(rank) != "0") return;
  }
  std::string dirs;
  for (const std::string& d : c.local_prefixes) dirs += (dirs.empty() ? "" : ", ") + d;
  LARDER_LOG_WARN(
      "LARDER_PREFIX {} {} on a node-local file system: read as {} without the cache (its files "
      "are this node's own, and its page cache serves them already); LARDER_LOCAL_FS=cache "
      "caches {} anyway",
      dirs, c.local_prefixes.size() == 1 ? "is" : "are",
      c.local_prefixes.size() == 1 ? "it is," : "they are,",
      c.local_prefixes.size() == 1 ? "it" : "them");
}

}  // namespace

Runtime::Parsed Runtime::parse_environment() {
  Parsed p;
  auto config = Config::from_environment();
  if (config.ok()) {
    p.config = std::move(*config);
  } else {
    p.status = config.status();
  }
  return p;
}

namespace {

// MPI_COMM_WORLD itself, or a communicator with the same ranks in the same order.
bool is_world(MPI_Comm comm) {
  if (comm == MPI_COMM_WORLD) return true;
  if (comm == MPI_COMM_NULL) return false;
  int initialized = 0;
  int finalized = 0;
  if (MPI_Initialized(&initialized) != MPI_SUCCESS || initialized == 0 ||
      MPI_Finalized(&finalized) != MPI_SUCCESS || finalized != 0) {
    return false;
  }
  int result = MPI_UNEQUAL;
  if (MPI_Comm_compare(comm, MPI_COMM_WORLD, &result) != MPI_SUCCESS) return false;
  return result == MPI_IDENT || result == MPI_CONGRUENT;
}

}  // namespace

Runtime::Runtime() : Runtime(parse_environment()) {}

Runtime::Runtime(Parsed parsed)
    : config_(std::move(parsed.config)),
      config_status_(std::move(parsed.status)),
      requested_(config_status_.ok() && config_.enabled && !config_.prefixes.empty()),
      pid_(::getpid()) {
  if (config_status_.ok()) {
    log::set_level(config_.log_level);
    tell_local_prefixes(config_);
  }
}

void Runtime::set_agent(std::unique_ptr<agent::AgentServer> agent) noexcept {
  agent::AgentServer* expected = nullptr;
  if (agent_.compare_exchange_strong(expected, agent.get(), std::memory_order_acq_rel)) {
    (void)agent.release();  // owned by the Runtime from now on, never deleted
  }
}

agent::AgentClient* Runtime::worker_client() noexcept {
  if (auto* c = client_.load(std::memory_order_acquire)) return c;
  if (client_failed_.load(std::memory_order_acquire)) return nullptr;
  try {
    std::lock_guard lock(client_mu_);
    if (auto* c = client_.load(std::memory_order_acquire)) return c;
    const char* name = std::getenv(agent::kEnvName);
    auto connected = agent::AgentClient::connect(name != nullptr ? name : "", config_);
    if (!connected.ok()) {
      LARDER_LOG_INFO("no agent to serve this worker process, reading the file system: {}",
                      connected.status().message());
      client_failed_.store(true, std::memory_order_release);
      return nullptr;
    }
    auto* c = connected->release();  // never deleted: forked children and exit handlers use it
    client_.store(c, std::memory_order_release);
    return c;
  } catch (...) {
    client_failed_.store(true, std::memory_order_release);
    return nullptr;
  }
}

void Runtime::on_fork_child() noexcept {
  pid_.store(::getpid(), std::memory_order_relaxed);
  forked_.store(true, std::memory_order_relaxed);
  active_.store(false, std::memory_order_relaxed);
  files_.reset_lock_in_child();
  produced_.reset_lock_in_child();
  if (agent::AgentServer* a = agent_.load(std::memory_order_relaxed)) a->close_in_child();
  mpi_life_.pid.store(0, std::memory_order_relaxed);
  if (auto* old = client_.exchange(nullptr, std::memory_order_relaxed)) old->abandon_in_child();
  client_failed_.store(false, std::memory_order_relaxed);
}

void Runtime::mark_written(const std::string& abs) {
  // The file, and its directory (whose listing and times the write changes).
  const std::size_t slash = abs.rfind('/');
  const std::string parent = slash == 0 ? "/" : abs.substr(0, slash);
  std::lock_guard lock(written_mu_);
  for (const std::string* p : {&abs, &parent}) {
    if (std::find(written_.begin(), written_.end(), *p) == written_.end()) written_.push_back(*p);
  }
  any_written_.store(true, std::memory_order_relaxed);
}

bool Runtime::written(const std::string& abs) const {
  if (!any_written_.load(std::memory_order_relaxed)) return false;
  std::lock_guard lock(written_mu_);
  for (const std::string& w : written_) {
    if (w == abs) return true;
  }
  return false;
}

Lease Runtime::session() const noexcept {
  if (forked_.load(std::memory_order_relaxed)) return {};
  std::shared_ptr<Session> s;
  try {
    std::shared_lock lock(session_mu_);
    s = session_;
  } catch (...) {  // std::system_error from the lock: no lease
    return {};
  }
  if (s == nullptr || !s->try_lease()) return {};
  return Lease(std::move(s));
}

Status Runtime::init(MPI_Comm comm, Starter starter) {
  std::lock_guard lock(lifecycle_mu_);
  if (session_ != nullptr) {  // written only under lifecycle_mu_, held here
    if (starter == Starter::kProgram && starter_ == Starter::kHooks && is_world(comm)) {
      ++program_refs_;  // joins the session MPI_Init started; larder_finalize drops it
      return {};
    }
    return {Errc::kInvalidArgument, EALREADY,
            starter_ == Starter::kHooks
                ? "larder is already running over MPI_COMM_WORLD (started at MPI_Init); "
                  "larder_init may join it only over MPI_COMM_WORLD"
                : "larder is already initialized"};
  }
  const auto started = std::chrono::steady_clock::now();
  // The hooks start from the configuration parsed once when the Runtime was built; a program's
  // larder_init reads the environment at that moment (it may have set LARDER_* itself).
  Config config;
  if (starter == Starter::kHooks) {
    if (!config_status_.ok()) return config_status_;
    config = config_;
  } else {
    auto parsed = Config::from_environment();
    if (!parsed.ok()) return parsed.status();
    config = std::move(*parsed);
    log::set_level(config.log_level);
  }
  Result<std::unique_ptr<Session>> session = Status(Errc::kInternal, 0, "");
  if (comm == MPI_COMM_NULL) {
    session = Session::create_local(std::move(config), seams_);
  } else {
    auto job = MpiJob::create(comm, config);
    if (!job.ok()) return job.status();
    session = Session::create_mpi(std::move(config), std::move(*job), seams_);
  }
  if (!session.ok()) return session.status();
  // Larder's own start-up, and MPI's before it (when the hooks started MPI), for the stats.
  (*session)->stats().add(
      Counter::startup_larder_ns,
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                     std::chrono::steady_clock::now() - started)
                                     .count()));
  (*session)->stats().add(Counter::startup_mpi_init_ns,
                          mpi_init_ns_.load(std::memory_order_relaxed));
  std::shared_ptr<Session> made(std::move(*session));
  {
    std::unique_lock publish(session_mu_);
    session_ = std::move(made);
  }
  active_.store(true, std::memory_order_release);
  starter_ = starter;
  program_refs_ = 0;
  return {};
}

void Runtime::set_seams_for_testing(Seams seams) {
  std::lock_guard lock(lifecycle_mu_);
  seams_ = std::move(seams);
}

Status Runtime::finalize(Starter starter) {
  std::lock_guard lock(lifecycle_mu_);
  if (starter == Starter::kProgram && starter_ == Starter::kHooks && session_ != nullptr) {
    if (program_refs_ == 0) {
      return {Errc::kUnavailable, 0,
              "larder was started at MPI_Init and stops at MPI_Finalize; this "
              "larder_finalize matches no larder_init"};
    }
    --program_refs_;
    return {};
  }
  // Files this process produced and still holds open are published while the job can read them.
  if (session_ != nullptr) produce::publish_unfinished(session_.get(), produced_);
  std::shared_ptr<Session> session;
  {
    std::unique_lock withdraw(session_mu_);
    session.swap(session_);
  }
  active_.store(false, std::memory_order_release);
  if (session == nullptr) {
    return {Errc::kUnavailable, 0, "larder is not initialized"};
  }
  // The agent's requests hold leases: stop it (its clients fall back to the file system) before
  // the session waits for the leases to end.
  agent::AgentServer* agent = starter == Starter::kHooks ? this->agent() : nullptr;
  Session* s = session.get();
  return session->close([agent, s] {
    if (agent == nullptr) return;
    agent->stop();
    agent->fold_worker_stats(s->stats());  // the workers still alive
  });
}

}  // namespace larder
