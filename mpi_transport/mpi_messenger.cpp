#include "mpi_transport/mpi_messenger.hpp"

#include <cerrno>
#include <chrono>

#include "mpi_transport/mpi_status.hpp"
#include "runtime/common/log.hpp"

namespace larder::mpi {

Result<std::unique_ptr<MpiMessenger>> MpiMessenger::create(MPI_Comm parent) {
  auto comm = Comm::dup(parent);
  if (!comm.ok()) return comm.status();
  MPI_Comm_set_errhandler(comm->get(), MPI_ERRORS_RETURN);
  return std::unique_ptr<MpiMessenger>(new MpiMessenger(std::move(*comm)));
}

MpiMessenger::~MpiMessenger() = default;

void MpiMessenger::on(Channel channel, Handler handler) {
  handlers_[static_cast<std::size_t>(channel)] = std::move(handler);
}

Status MpiMessenger::send(int to, Channel channel, std::span<const std::byte> body) {
  if (body.size() > kMaxMessage) {
    return {Errc::kInvalidArgument, EMSGSIZE, "message larger than kMaxMessage"};
  }
  Status s;
  {
    std::lock_guard lock(send_mu_);
    Pending& p = pending_.emplace_back();
    p.body.assign(body.begin(), body.end());
    s = from_mpi(MPI_Isend(p.body.data(), static_cast<int>(p.body.size()), MPI_BYTE, to,
                           static_cast<int>(channel), comm_.get(), &p.request),
                 "MPI_Isend");
    if (!s.ok()) {
      pending_.pop_back();
      return s;
    }
  }
  if (to != rank_) {
    sent_.fetch_add(1, std::memory_order_relaxed);
    if (on_send_ && channel != Channel::kWake) on_send_();  // a wake-up awaits no answer
  }
  return s;
}

bool MpiMessenger::complete_sends() {
  std::lock_guard lock(send_mu_);
  bool any = false;
  for (auto it = pending_.begin(); it != pending_.end();) {
    int done = 0;
    if (MPI_Test(&it->request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done != 0) {
      it = pending_.erase(it);
      any = true;
    } else {
      ++it;
    }
  }
  return any;
}

bool MpiMessenger::poll() {
  std::unique_lock lock(poll_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return false;  // another thread is receiving
  bool worked = false;
  std::byte buf[kMaxMessage];
  for (;;) {
    int flag = 0;
    MPI_Message message = MPI_MESSAGE_NULL;
    MPI_Status status;
    if (MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_.get(), &flag, &message, &status) !=
            MPI_SUCCESS ||
        flag == 0) {
      break;
    }
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    if (count < 0 || static_cast<std::size_t>(count) > sizeof buf) {
      LARDER_LOG_LIMITED(kWarn, "dropped a message of {} bytes from rank {}", count,
                         status.MPI_SOURCE);
      std::vector<std::byte> big(static_cast<std::size_t>(count > 0 ? count : 0));
      MPI_Mrecv(big.data(), count, MPI_BYTE, &message, MPI_STATUS_IGNORE);
      continue;
    }
    if (MPI_Mrecv(buf, count, MPI_BYTE, &message, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
    worked = true;
    const int tag = status.MPI_TAG;
    if (tag <= 0 || tag >= kChannelCount || !handlers_[static_cast<std::size_t>(tag)]) continue;
    try {
      handlers_[static_cast<std::size_t>(tag)](
          status.MPI_SOURCE, std::span<const std::byte>(buf, static_cast<std::size_t>(count)));
    } catch (...) {
      LARDER_LOG_LIMITED(kError, "a message handler failed (channel {})", tag);
    }
  }
  return complete_sends() || worked;
}

namespace {

std::int64_t steady_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A waiting thread that polled this recently is still polling (it yields between polls).
constexpr std::int64_t kWaiterGoneNs = 50'000;

}  // namespace

void MpiMessenger::wake(int to) {
  if (to == rank_) return;
  constexpr std::int64_t kWakeEveryNs = 1'000'000;
  const std::int64_t now = steady_ns();
  {
    std::lock_guard lock(wake_mu_);
    auto [it, added] = woken_ns_.try_emplace(to, now);
    if (!added) {
      if (now - it->second < kWakeEveryNs) return;
      it->second = now;
    }
  }
  (void)send(to, Channel::kWake, {});  // a lost wake-up costs time, never bytes
}

bool MpiMessenger::poll_waiting() {
  waiting_polls_.fetch_add(1, std::memory_order_relaxed);
  const bool worked = poll();
  waiting_poll_ns_.store(steady_ns(), std::memory_order_relaxed);
  waiting_polls_.fetch_sub(1, std::memory_order_relaxed);
  return worked;
}

bool MpiMessenger::driven_by_waiters() const noexcept {
  return waiting_polls_.load(std::memory_order_relaxed) > 0 ||
         steady_ns() - waiting_poll_ns_.load(std::memory_order_relaxed) < kWaiterGoneNs;
}

Status MpiMessenger::close() {
  {
    std::lock_guard lock(send_mu_);
    for (Pending& p : pending_) {
      // Eager-sized messages complete locally; a send to a rank that never receives it is
      // cancelled rather than waited for.
      int done = 0;
      MPI_Test(&p.request, &done, MPI_STATUS_IGNORE);
      if (done == 0) {
        MPI_Cancel(&p.request);
        MPI_Request_free(&p.request);
      }
    }
    pending_.clear();
  }
  return comm_.close();
}

}  // namespace larder::mpi
