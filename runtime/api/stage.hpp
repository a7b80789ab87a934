// Staging: loading whole trees into the job's cache before they are read (larder_stage).
//
// Every rank walks the same roots through the cache (so the PFS sees one lookup per path and one
// listing per directory for the whole job) and builds the same ordered list of chunks: regular
// managed files, in the order of the roots and then of the (cached, hence identical) listings.
// Chunk g of that list is loaded by rank g mod size with Cache::place, which reads it from the
// PFS into that rank's arena unless some rank already has it. So a tree is read from the PFS
// once, in parallel, and spread evenly over the job's memory.
//
// Directories are walked recursively; symlinks are followed to files but not to directories
// (no cycles); special files, unmanaged paths and paths that cannot be resolved are skipped.
#ifndef LARDER_RUNTIME_API_STAGE_HPP_
#define LARDER_RUNTIME_API_STAGE_HPP_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/api/file_service.hpp"
#include "runtime/cache/cache.hpp"

namespace larder {

struct StageTotals {
  std::uint64_t files = 0;       // regular managed files found
  std::uint64_t bytes = 0;       // their total size
  std::uint64_t chunks = 0;      // their chunks
  std::uint64_t not_cached = 0;  // chunks the cache could not take (later reads go to the PFS)
  std::uint64_t skipped = 0;     // paths not staged: unmanaged, missing, special, unlistable
};

// The files under `roots` (absolute, lexically clean paths), as the cache sees them, in an order
// every rank computes identically. Counts skipped paths into `totals`.
std::vector<CachedFile> stage_walk(FileService& svc, std::span<const std::string> roots,
                                   StageTotals& totals);

// Loads this rank's share (chunk g when g % size == rank) of the chunks of `files`. Fills files,
// bytes and chunks (the same on every rank) and not_cached (this rank's).
void stage_load(Cache& cache, std::span<const CachedFile> files, int rank, int size,
                StageTotals& totals);

}  // namespace larder

#endif  // LARDER_RUNTIME_API_STAGE_HPP_
