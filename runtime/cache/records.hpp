// The payloads of directory entries: what a path resolved to, and where a chunk lives.
#ifndef LARDER_RUNTIME_CACHE_RECORDS_HPP_
#define LARDER_RUNTIME_CACHE_RECORDS_HPP_

#include <cstdint>

#include "runtime/chunk/chunk_key.hpp"
#include "runtime/pfs/file_meta.hpp"
#include "runtime/tier/arena.hpp"

namespace larder {

// A path as written (absolute, lexically clean): the stat() answer, including its errno.
struct PathRecord {
  static constexpr std::uint32_t kManaged = 1u << 0;  // canonical name is under a prefix

  std::int32_t error = 0;  // errno of resolving the path; 0 when it exists
  std::uint32_t flags = 0;
  FileId file;    // hash of the canonical name: the identity of the contents
  FileMeta meta;  // valid when error == 0

  bool managed() const noexcept { return (flags & kManaged) != 0; }
};

// Where a READY chunk sits: rank, tier and byte range in that rank's arena.
struct ChunkRecord {
  std::int32_t owner = -1;
  Tier tier = Tier::kMem;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_CACHE_RECORDS_HPP_
