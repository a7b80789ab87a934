// Comm: the one owner of a communicator Larder created (MPI_Comm_dup / MPI_Comm_split_type).
// Freeing is collective, so it is an explicit close(); the destructor only reports a leak.
#ifndef LARDER_MPI_TRANSPORT_COMM_HPP_
#define LARDER_MPI_TRANSPORT_COMM_HPP_

#include <mpi.h>

#include <utility>

#include "runtime/common/status.hpp"

namespace larder::mpi {

class Comm {
 public:
  Comm() = default;
  static Result<Comm> dup(MPI_Comm parent);                        // collective over parent
  static Result<Comm> split_shared(MPI_Comm parent);               // ranks sharing memory
  static Result<Comm> split(MPI_Comm parent, int color, int key);  // collective over parent

  Comm(Comm&& o) noexcept : comm_(std::exchange(o.comm_, MPI_COMM_NULL)) {}
  Comm& operator=(Comm&& o) noexcept {
    std::swap(comm_, o.comm_);
    return *this;
  }
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm();

  MPI_Comm get() const noexcept { return comm_; }
  int rank() const noexcept;
  int size() const noexcept;
  Status close();  // collective
  // Gives the communicator up without freeing it (it stays allocated until MPI_Finalize):
  // for a teardown that must not free what a read still in flight may use.
  void leak() noexcept { comm_ = MPI_COMM_NULL; }

 private:
  explicit Comm(MPI_Comm c) noexcept : comm_(c) {}
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace larder::mpi

#endif  // LARDER_MPI_TRANSPORT_COMM_HPP_
