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

  // Called after each send to another rank (the progress thread polls eagerly while this rank
  // waits for answers: MpiJob). Set before the first send and not changed while sends run.
  void on_send(std::function<void()> hook) { on_send_ = std::move(hook); }
  // Receives and handles what has arrived, completes finished sends. True when it did work.
  // Thread-safe (one caller at a time does the receiving).
  bool poll();
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
  std::function<void()> on_send_;                // likewise
  std::mutex poll_mu_;                           // one receiver at a time
  std::mutex send_mu_;
  std::list<Pending> pending_;  // guarded by send_mu_
};

}  // namespace larder::mpi

#endif  // LARDER_MPI_TRANSPORT_MPI_MESSENGER_HPP_
