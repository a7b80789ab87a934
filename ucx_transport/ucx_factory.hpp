// The UCX data plane as the rest of Larder sees it: a Transport that also has progress to drive
// and a collective close. No UCX header is visible from here.
#ifndef LARDER_UCX_TRANSPORT_UCX_FACTORY_HPP_
#define LARDER_UCX_TRANSPORT_UCX_FACTORY_HPP_

#include <mpi.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runtime/config/config.hpp"
#include "runtime/directory/shard_ops.hpp"
#include "runtime/tier/local_tiers.hpp"
#include "runtime/transport/messenger.hpp"
#include "runtime/transport/progress_thread.hpp"
#include "runtime/transport/transport.hpp"

namespace larder {

class ClosableTransport : public Transport {
 public:
  // How the progress thread drives this transport (progress, event fds, arm).
  virtual std::vector<ProgressSource> progress_sources() = 0;
  // The directory's shards and the messenger on the same fabric (null when not made).
  virtual ShardOps* shards() noexcept = 0;
  virtual Messenger* messenger() noexcept = 0;
  // Messages this rank has sent: the messenger's, and the replies of remote reads as messages.
  virtual std::uint64_t messages_sent() const noexcept = 0;
  // Collective: quiesces and releases the shards, the messenger, every endpoint, registration
  // and the worker (in that order).
  virtual Status close() = 0;
};

struct UcxOptions {
  // A get that has not completed by then fails (the read falls back to the PFS).
  std::chrono::milliseconds timeout{60'000};
  // Testing only (Seams::ucx_dead_peer): this rank's endpoint to that rank is connected to a
  // dead worker, so every get from it fails the way a dead peer's would. -1: none.
  int fault_peer = -1;
  // How the directory's operations reach other ranks' shards (LARDER_DIRECTORY_OPS); `auto` is
  // decided by every rank together (rma only if every rank has a hardware one-sided transport).
  DirectoryOps directory_ops = DirectoryOps::kAuto;
  // How chunks are read from other ranks (LARDER_REMOTE_READS), decided the same way.
  RemoteReads remote_reads = RemoteReads::kAuto;
  // A directory of this host's shared memory (the job's) where the host's address books are
  // built (address_book.hpp); they are unlinked once mapped.
  std::string book_dir = "/dev/shm";
};

// Collective over `comm`: creates the UCX context and worker, registers the arenas, allocates
// the directory shard (`shard_bytes`, 0: none) and puts worker addresses, arena and shard
// addresses and remote keys in each host's address books (one copy per host, address_book.hpp);
// registers the messenger's handlers.
Result<std::unique_ptr<ClosableTransport>> make_ucx_transport(MPI_Comm comm,
                                                              const LocalTiers& tiers,
                                                              const UcxOptions& options,
                                                              std::size_t shard_bytes = 0);

}  // namespace larder

#endif  // LARDER_UCX_TRANSPORT_UCX_FACTORY_HPP_
