// Window: the one owner of an MPI window in a passive-target epoch for its whole life
// (MPI_Win_lock_all at creation, MPI_Win_unlock_all at close). Freeing is collective, so it is
// an explicit close(); the destructor only reports a leak.
#ifndef LARDER_MPI_TRANSPORT_WINDOW_HPP_
#define LARDER_MPI_TRANSPORT_WINDOW_HPP_

#include <mpi.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "runtime/common/status.hpp"

namespace larder::mpi {

class Window {
 public:
  Window() = default;
  // MPI_Win_allocate of `bytes` zeroed bytes (displacement unit 1). Collective.
  static Result<Window> allocate(MPI_Comm comm, std::size_t bytes);
  // MPI_Win_create over memory the caller owns and keeps alive until close(). Collective.
  static Result<Window> expose(MPI_Comm comm, void* base, std::size_t bytes);
  // MPI_Win_create_dynamic: memory is attached later, one range at a time (attach()), and
  // addressed by its absolute address (MPI_Get_address). Collective.
  static Result<Window> dynamic(MPI_Comm comm);
  // MPI_Win_attach of [base, base + bytes) to a dynamic window (local). The memory stays
  // attached until close().
  Status attach(void* base, std::size_t bytes);

  Window(Window&& o) noexcept
      : win_(std::exchange(o.win_, MPI_WIN_NULL)),
        base_(std::exchange(o.base_, nullptr)),
        attached_(std::move(o.attached_)) {}
  Window& operator=(Window&& o) noexcept {
    std::swap(win_, o.win_);
    std::swap(base_, o.base_);
    std::swap(attached_, o.attached_);
    return *this;
  }
  Window(const Window&) = delete;
  Window& operator=(const Window&) = delete;
  ~Window();

  MPI_Win get() const noexcept { return win_; }
  void* base() const noexcept { return base_; }
  Status close();  // collective

 private:
  static Result<Window> finish(MPI_Win win, void* base);
  MPI_Win win_ = MPI_WIN_NULL;
  void* base_ = nullptr;
  std::vector<void*> attached_;  // dynamic windows: detached at close()
};

}  // namespace larder::mpi

#endif  // LARDER_MPI_TRANSPORT_WINDOW_HPP_
