#include "runtime/api/runtime.hpp"

#include <cerrno>

#include "mpi_transport/mpi_job.hpp"
#include "runtime/common/log.hpp"

namespace larder {

Runtime& Runtime::instance() {
  static Runtime* const runtime = new Runtime();  // never deleted: see the header
  return *runtime;
}

Status Runtime::init(MPI_Comm comm) {
  std::lock_guard lock(lifecycle_mu_);
  if (session_.load(std::memory_order_acquire) != nullptr) {
    return Status(Errc::kInvalidArgument, EALREADY, "larder is already initialized");
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
  return {};
}

Status Runtime::finalize() {
  std::lock_guard lock(lifecycle_mu_);
  std::shared_ptr<Session> session = session_.exchange(nullptr, std::memory_order_acq_rel);
  active_.store(false, std::memory_order_release);
  if (session == nullptr) {
    return Status(Errc::kUnavailable, 0, "larder is not initialized");
  }
  return session->close();
}

}  // namespace larder
