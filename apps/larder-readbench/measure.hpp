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
  double gbps() const { return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0; }
  double usec_per_op() const { return ops > 0 ? seconds * 1e6 / static_cast<double>(ops) : 0; }
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
};

// Collective (2+ ranks): rank 0 loads every chunk of a file, then the reader (rank 0 for self,
// rank 1 otherwise) reads them back through Larder. The result is meaningful on rank 0.
Sample measure_hits(const Plan& plan, Locality locality);
// memcpy of the same sizes from the same number of distinct source chunks (rank 0 only).
Sample measure_memcpy(const Plan& plan);
// XXH3-64 (the cache's content hash) of the same sizes from the same chunks (rank 0 only).
Sample measure_hash(const Plan& plan);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_READBENCH_MEASURE_HPP_
