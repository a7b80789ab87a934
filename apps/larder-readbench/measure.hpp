// Measurements of larder-readbench: the bandwidth and latency of cache hits of one locality
// (self, node, remote) at one chunk size, and of memcpy with the same access pattern.
#ifndef LARDER_APPS_LARDER_READBENCH_MEASURE_HPP_
#define LARDER_APPS_LARDER_READBENCH_MEASURE_HPP_

#include <cstdint>
#include <string>

namespace larder::bench {

enum class Locality { kSelf, kNode, kRemote };
const char* locality_name(Locality l);

struct Sample {
  std::uint64_t bytes = 0;
  std::uint64_t ops = 0;
  double seconds = 0;
  // CPU time during the measurement: the reader's process (all its threads), and the serving
  // rank's threads other than its main one (Larder's: the main thread waits in MPI_Barrier,
  // which spins). Zero where not measured (memcpy, hash; serving: self hits).
  double reader_cpu_s = 0;
  double serving_cpu_s = 0;
  double gbps() const { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }
  double usec_per_op() const { return ops > 0 ? seconds * 1e6 / static_cast<double>(ops) : 0; }
  double reader_ns_per_byte() const {
    return bytes > 0 ? reader_cpu_s * 1e9 / static_cast<double>(bytes) : 0;
  }
  double serving_ns_per_byte() const {
    return bytes > 0 ? serving_cpu_s * 1e9 / static_cast<double>(bytes) : 0;
  }
};

struct Plan {
  std::string dir;           // where the test files live (created by rank 0)
  std::uint64_t chunk = 0;   // chunk size = read size
  std::uint64_t chunks = 0;  // chunks in the file
  std::uint64_t target = 0;  // bytes to read per measurement (at least one pass)
  std::string transport;     // ucx or mpi (for remote hits)
  bool verify = true;        // LARDER_VERIFY: content hashes checked where bytes enter a node
  // The chunks live in the disk tier (LARDER_MEM=0, LARDER_DISK, LARDER_DIR=<dir>/local), not
  // in memory: node-local hits then ask whether their pages are in memory (Cache::disk_checked).
  bool disk = false;
  // How ranks other than the reader wait while it reads: in MPI_Barrier, which MPICH and Open
  // MPI make a spin on one core, as in a job that calls MPI while another rank reads; or asleep
  // (MPI_Ibarrier tested every millisecond), as a rank that waits for its GPU or its own I/O,
  // which leaves that core to Larder's threads.
  bool waiters_sleep = false;
};

// Collective (2+ ranks): rank 0 loads every chunk of a file, then the reader (rank 0 for self,
// rank 1 otherwise) reads them back through Larder. The result is meaningful on rank 0.
Sample measure_hits(const Plan& plan, Locality locality);
// memcpy of the same sizes from the same number of distinct source chunks (rank 0 only).
Sample measure_memcpy(const Plan& plan);
// XXH3-64 (the cache's content hash) of the same sizes from the same chunks (rank 0 only).
Sample measure_hash(const Plan& plan);
// XXH3-64 of one buffer of a remote read's piece size (256 KiB to 1 MiB), again and again: the
// hash of bytes in the core's cache, as a piece is hashed right after it arrived (rank 0 only).
Sample measure_hash_cached(const Plan& plan);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_READBENCH_MEASURE_HPP_
