// ShardOps: the one-sided operations the job-wide directory is made of, on the shards that every
// rank exposes (ShardedDirectory, docs/protocol.md). Two implementations: MPI one-sided windows
// (mpi_transport/window_shards.*) and UCX remote memory (ucx_transport/ucx_shards.*).
//
// Operations are issued by the calling thread and complete at its next flush: the values a
// fetching operation returns are valid, and every write is visible at the target, once flush()
// returns OK. Buffers must stay valid until then. Thread-safe: each thread flushes its own.
// Displacements are byte offsets into the target's shard; every word is 8-byte aligned.
#ifndef LARDER_RUNTIME_DIRECTORY_SHARD_OPS_HPP_
#define LARDER_RUNTIME_DIRECTORY_SHARD_OPS_HPP_

#include <cstddef>
#include <cstdint>

#include "runtime/common/status.hpp"

namespace larder {

class ShardOps {
 public:
  virtual ~ShardOps() = default;
  virtual int rank() const noexcept = 0;
  virtual int size() const noexcept = 0;
  // *old = the word at (target, disp); it becomes *desired if it was *expected. Atomic.
  virtual Status compare_and_swap(int target, std::uint64_t disp, const std::uint64_t* desired,
                                  const std::uint64_t* expected, std::uint64_t* old) = 0;
  // *old = the word, which grows by *add. Atomic.
  virtual Status fetch_add(int target, std::uint64_t disp, const std::uint64_t* add,
                           std::uint64_t* old) = 0;
  // The word becomes *value. Atomic with respect to the two above.
  virtual Status store(int target, std::uint64_t disp, const std::uint64_t* value) = 0;
  // Copies `bytes` bytes from the target (not atomic: callers validate what they read).
  virtual Status get(int target, std::uint64_t disp, void* into, std::size_t bytes) = 0;
  // Writes `bytes` bytes at the target (not atomic).
  virtual Status put(int target, std::uint64_t disp, const void* from, std::size_t bytes) = 0;
  // Completes this thread's operations to `target` (writes visible there).
  virtual Status flush(int target) = 0;
  // Completes this thread's operations to every target.
  virtual Status flush_all() = 0;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_DIRECTORY_SHARD_OPS_HPP_
