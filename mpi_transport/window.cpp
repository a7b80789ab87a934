#include "mpi_transport/window.hpp"

#include <cstring>

#include "mpi_transport/mpi_status.hpp"
#include "runtime/common/log.hpp"

namespace larder::mpi {

Result<Window> Window::finish(MPI_Win win, void* base) {
  // Errors on this window come back as return codes, not as an abort of the job.
  MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
  if (Status s = from_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, win), "MPI_Win_lock_all"); !s.ok()) {
    MPI_Win_free(&win);
    return s;
  }
  Window w;
  w.win_ = win;
  w.base_ = base;
  return w;
}

Result<Window> Window::allocate(MPI_Comm comm, std::size_t bytes) {
  void* base = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  if (Status s = from_mpi(
          MPI_Win_allocate(static_cast<MPI_Aint>(bytes), 1, MPI_INFO_NULL, comm, &base, &win),
          "MPI_Win_allocate");
      !s.ok()) {
    return s;
  }
  if (bytes > 0) std::memset(base, 0, bytes);
  // Every rank must see zeroed shards before anyone claims a slot.
  if (Status s = from_mpi(MPI_Barrier(comm), "MPI_Barrier"); !s.ok()) {
    MPI_Win_free(&win);
    return s;
  }
  return finish(win, base);
}

Result<Window> Window::expose(MPI_Comm comm, void* base, std::size_t bytes) {
  MPI_Win win = MPI_WIN_NULL;
  if (Status s = from_mpi(MPI_Win_create(bytes > 0 ? base : nullptr, static_cast<MPI_Aint>(bytes),
                                         1, MPI_INFO_NULL, comm, &win),
                          "MPI_Win_create");
      !s.ok()) {
    return s;
  }
  return finish(win, base);
}

Result<Window> Window::dynamic(MPI_Comm comm) {
  MPI_Win win = MPI_WIN_NULL;
  if (Status s =
          from_mpi(MPI_Win_create_dynamic(MPI_INFO_NULL, comm, &win), "MPI_Win_create_dynamic");
      !s.ok()) {
    return s;
  }
  return finish(win, nullptr);
}

Status Window::attach(void* base, std::size_t bytes) {
  if (win_ == MPI_WIN_NULL) return {Errc::kInvalidArgument, EINVAL, "no window"};
  if (bytes == 0) return {};
  if (Status s =
          from_mpi(MPI_Win_attach(win_, base, static_cast<MPI_Aint>(bytes)), "MPI_Win_attach");
      !s.ok()) {
    return s;
  }
  attached_.push_back(base);
  return {};
}

Window::~Window() {
  if (win_ != MPI_WIN_NULL) LARDER_LOG_WARN("an MPI window was not freed (close() not called)");
}

Status Window::close() {
  if (win_ == MPI_WIN_NULL) return {};
  Status s = from_mpi(MPI_Win_unlock_all(win_), "MPI_Win_unlock_all");
  for (void* base : attached_) {
    if (Status d = from_mpi(MPI_Win_detach(win_, base), "MPI_Win_detach"); s.ok()) s = d;
  }
  attached_.clear();
  Status f = from_mpi(MPI_Win_free(&win_), "MPI_Win_free");
  win_ = MPI_WIN_NULL;
  return s.ok() ? f : s;
}

}  // namespace larder::mpi
