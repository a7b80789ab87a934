// MpiMessenger: the Messenger over MPI point-to-point on a private duplicate communicator.
//
// Sends are MPI_Isend of a private copy of the message; their requests are completed by poll().
// poll() (the progress thread, every pass) receives every message that has arrived (MPI_Improbe,
// MPI_Mrecv) and runs its channel's handler. No receive is ever posted in advance, so a
// communicator with nothing to receive costs one MPI_Improbe per pass.
#ifndef LARDER_MPI_TRANSPORT_MPI_MESSENGER_HPP_
#define LARDER_MPI_TRANSPORT_MPI_MESSENGER_HPP_

#include <mpi.h>

#include <array>
#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "mpi_transport/comm.hpp"
#include "runtime/transport/messenger.hpp"

namespace larder::mpi {

class MpiMessenger final : public Messenger {
 public:
  // Collective over `parent` (dups it).
  static Result<std::unique_ptr<MpiMessenger>> create(MPI_Comm parent);
  MpiMessenger(const MpiMessenger&) = delete;
  MpiMessenger& operator=(const MpiMessenger&) = delete;
  ~MpiMessenger() override;

  void on(Channel channel, Handler handler) override;
  Status send(int to, Channel channel, std::span<const std::byte> body) override;
  std::uint64_t messages_sent() const noexcept override {
    return sent_.load(std::memory_order_relaxed);
  }

  // Called after each send of a request to another rank (MpiJob: its progress thread polls
  // eagerly while this rank waits for answers). Set before the first send and not changed while
  // sends run.
  void on_send(std::function<void()> hook) { on_send_ = std::move(hook); }
  // Wakes rank `to`'s progress thread before one-sided operations that its MPI serves in
  // software: a kWake message (at most one a millisecond per rank), which its next poll finds;
  // receiving it is work, after which that thread polls hot.
  void wake(int to) override;
  // Receives and handles what has arrived, completes finished sends. True when it did work.
  // Thread-safe (one caller at a time does the receiving).
  bool poll();
  // poll() from a thread waiting for an answer (Messenger::poll_waiting); while such threads
  // poll, driven_by_waiters() says so, and the progress thread leaves the polling to them.
  bool poll_waiting() override;
  bool poll_helps() const noexcept override { return true; }
  bool driven_by_waiters() const noexcept;
  // Collective: waits for this rank's sends, frees the communicator.
  Status close();
  // Gives the communicator up without freeing it (see MpiJob::close).
  void leak() noexcept { comm_.leak(); }

 private:
  explicit MpiMessenger(Comm comm) : comm_(std::move(comm)) { MPI_Comm_rank(comm_.get(), &rank_); }
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<std::byte> body;
  };
  bool complete_sends();

  Comm comm_;
  int rank_ = 0;
  std::atomic<std::uint64_t> sent_{0};           // to other ranks
  std::array<Handler, kChannelCount> handlers_;  // set before start, then read-only
  // Threads inside poll_waiting(), and when one last left it (steady clock, ns).
  std::atomic<int> waiting_polls_{0};
  std::atomic<std::int64_t> waiting_poll_ns_{0};
  std::mutex wake_mu_;
  std::unordered_map<int, std::int64_t> woken_ns_;  // guarded by wake_mu_: the last kWake sent
  std::function<void()> on_send_;                   // likewise
  std::mutex poll_mu_;                              // one receiver at a time
  std::mutex send_mu_;
  std::list<Pending> pending_;  // guarded by send_mu_
};

}  // namespace larder::mpi

#endif  // LARDER_MPI_TRANSPORT_MPI_MESSENGER_HPP_
