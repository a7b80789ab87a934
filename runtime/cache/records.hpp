// The payloads of directory entries: what a path resolved to, and where a chunk lives.
#ifndef LARDER_RUNTIME_CACHE_RECORDS_HPP_
#define LARDER_RUNTIME_CACHE_RECORDS_HPP_

#include <cstddef>
#include <cstdint>

#include "runtime/chunk/chunk_key.hpp"
#include "runtime/common/content_hash.hpp"
#include "runtime/pfs/file_meta.hpp"
#include "runtime/tier/arena.hpp"

namespace larder {

// A path as written (absolute, lexically clean): the stat() answer, including its errno.
struct PathRecord {
  static constexpr std::uint32_t kManaged = 1u << 0;  // canonical name is under a prefix
  // Published by its producer (LARDER_PRODUCE): never checked against the PFS again.
  static constexpr std::uint32_t kProduced = 1u << 1;
  // Produced in `local` mode: the PFS has no copy; a failure of the cache is an I/O error.
  static constexpr std::uint32_t kLocalOnly = 1u << 2;

  std::int32_t error = 0;  // errno of resolving the path; 0 when it exists
  std::uint32_t flags = 0;
  FileId file;                 // hash of the canonical name: the chunk keys of the contents
  FileMeta meta;               // valid when error == 0
  std::int64_t checked_s = 0;  // when the PFS gave this answer (CLOCK_REALTIME, seconds)

  bool managed() const noexcept { return (flags & kManaged) != 0; }
  bool produced() const noexcept { return (flags & kProduced) != 0; }
  bool local_only() const noexcept { return (flags & kLocalOnly) != 0; }
  // Which version of the file the answer describes (file_version(meta)); 0 without a file.
  std::uint64_t version() const noexcept;
  // Whether `other` describes the same thing: the same errno, and for a file the same version.
  bool same_as(const PathRecord& other) const noexcept;
};

// A file's version as the PFS shows it to every client: inode, size, mtime and ctime with
// nanoseconds, hashed (never 0). Never the device: st_dev differs between client mounts.
std::uint64_t file_version(const FileMeta& meta) noexcept;

// Where a READY chunk sits: rank, tier and byte range in that rank's arena. In the directory it
// is the origin's copy (the rank that loaded it from the PFS), with the ticket the origin took
// (`position`: fanout.hpp maps tickets to places in the tree); in a holder entry, a node's copy
// with its place in the tree; in a node table and a rank's memo, the copy on that node (or the
// origin's, when the node could not keep a copy).
//
// `tier` kFile: the bytes sit in the owner's segment `segment` (a node file or a produced file,
// runtime/tier/segments.hpp), at `offset` in that file; otherwise in the owner's arena `tier`.
struct ChunkRecord {
  std::int32_t owner = -1;    // -1: "read the PFS" (then `segment` says why: a FallbackCause)
  std::uint32_t segment = 0;  // tier kFile only
  Tier tier = Tier::kMem;
  // 1: a schedule (larder_schedule) made this copy ready on this node before its reads. Set only
  // in the node table's and the scheduling rank's memo's record, never in the directory's, so
  // readers of this node (ranks and workers) count prefetch.ready from it.
  std::uint8_t ahead = 0;
  // With `ahead`: the chunk's mark in the node's PrefetchMarks (0: none), which the node's reads
  // set used (prefetch.unused_bytes). In the padding before `offset`: the record's size is kept.
  std::uint32_t mark = 0;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint64_t position = 0;
  std::uint64_t version = 0;  // file_version() of the file the bytes were read from (0: unknown)
  // content_hash() of the chunk's bytes, computed where they were read from the PFS (or
  // published by their producer) and carried with every copy's record: bytes that enter a node
  // are checked against it (0: not hashed, LARDER_VERIFY=off).
  std::uint64_t hash = 0;
};

// How other ranks reach a segment (KeyKind::kSegment): the transport's descriptor of it
// (Transport::expose), published by its owner before any chunk record names the segment.
struct SegmentRecord {
  std::uint32_t length = 0;
  std::uint32_t reserved = 0;
  std::byte descriptor[96] = {};
};

// A directory listing (KeyKind::kListing of the directory's path as written). A listing does not
// fit a directory slot, so the rank that lists the directory stores the records in its arena
// like a chunk, and the slot says where: readers copy the blob from its owner (own arena, a node
// peer's arena, or the transport), exactly as for a chunk. `error` is the errno of listing the
// directory (ENOENT, ENOTDIR, EACCES...), cached like a stat error; then there is no blob.
//
// The blob is `count` records in the layout getdents64 returns (struct dirent64: d_ino, d_off,
// d_reclen, d_type, d_name), each 8-byte aligned, with d_off rewritten to the record's ordinal
// (1, 2, ...) so telldir/seekdir cookies are stable across ranks.
struct ListingRecord {
  std::int32_t error = 0;
  std::int32_t owner = -1;
  Tier tier = Tier::kMem;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
  std::uint64_t count = 0;
  std::int64_t checked_s = 0;  // when the PFS listed it (CLOCK_REALTIME, seconds)
  std::uint64_t hash = 0;      // content_hash() of the blob (0: not hashed)
  // The directory's own version (file_version of its stat answer) from before it was listed,
  // when that answer shows no change in the second it was taken (0: unknown). A later job step
  // that finds the directory at this version uses the kept listing without listing it again.
  std::uint64_t dir_version = 0;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_CACHE_RECORDS_HPP_
