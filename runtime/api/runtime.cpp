#include "runtime/api/runtime.hpp"

#include <cerrno>

#include "mpi_transport/mpi_job.hpp"
#include "runtime/common/log.hpp"

namespace larder {

Runtime& Runtime::instance() {
  static Runtime* const runtime = new Runtime();  // never deleted: see the header
  return *runtime;
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

Status Runtime::init(MPI_Comm comm, Starter starter) {
  std::lock_guard lock(lifecycle_mu_);
  if (session_.load(std::memory_order_acquire) != nullptr) {
    if (starter == Starter::kProgram && starter_ == Starter::kHooks && is_world(comm)) {
      ++program_refs_;  // joins the session MPI_Init started; larder_finalize drops it
      return {};
    }
    return Status(Errc::kInvalidArgument, EALREADY,
                  starter_ == Starter::kHooks
                      ? "larder is already running over MPI_COMM_WORLD (started at MPI_Init); "
                        "larder_init may join it only over MPI_COMM_WORLD"
                      : "larder is already initialized");
  }
  auto config = Config::from_environment();
  if (!config.ok()) return config.status();
  Result<std::unique_ptr<Session>> session = Status(Errc::kInternal, 0, "");
  if (comm == MPI_COMM_NULL) {
    session = Session::create_local(std::move(*config));
  } else {
    auto job = MpiJob::create(comm, *config);
    if (!job.ok()) return job.status();
    session = Session::create_mpi(std::move(*config), std::move(*job));
  }
  if (!session.ok()) return session.status();
  session_.store(std::shared_ptr<Session>(std::move(*session)), std::memory_order_release);
  active_.store(true, std::memory_order_release);
  starter_ = starter;
  program_refs_ = 0;
  return {};
}

Status Runtime::finalize(Starter starter) {
  std::lock_guard lock(lifecycle_mu_);
  if (starter == Starter::kProgram && starter_ == Starter::kHooks &&
      session_.load(std::memory_order_acquire) != nullptr) {
    if (program_refs_ == 0) {
      return Status(Errc::kUnavailable, 0,
                    "larder was started at MPI_Init and stops at MPI_Finalize; this "
                    "larder_finalize matches no larder_init");
    }
    --program_refs_;
    return {};
  }
  std::shared_ptr<Session> session = session_.exchange(nullptr, std::memory_order_acq_rel);
  active_.store(false, std::memory_order_release);
  if (session == nullptr) {
    return Status(Errc::kUnavailable, 0, "larder is not initialized");
  }
  return session->close();
}

}  // namespace larder
