// Segments: whole files that one rank keeps on its node during the job, in the node's files
// directory (<shm job dir>/files-<node>/seg-<rank>-<id>): node files (a managed file copied
// whole to the node, for mmap and the dynamic loader) and produced files (written under
// LARDER_PRODUCE). A segment is a tier of its own (Tier::kFile): the chunks of its file are
// published in the directory as (owner, segment, offset), read by the node's other processes from
// their read-only mapping of the file and by other nodes through the transport, so a file held
// as a segment exists once on its node, not once in an arena and once more as a file.
//
// The owner maps each segment read-write until the job ends; nothing is evicted. Thread-safe.
#ifndef LARDER_RUNTIME_TIER_SEGMENTS_HPP_
#define LARDER_RUNTIME_TIER_SEGMENTS_HPP_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/common/status.hpp"
#include "runtime/tier/arena.hpp"

namespace larder {

class Segments {
 public:
  // A segment whose id has this bit lives in the node's disk files directory (a kept disk-tier
  // file, linked there: links cannot cross file systems).
  static constexpr std::uint32_t kDiskSegment = 1u << 31;
  // A kept store's file linked as a segment has the id kKeptSegment | its number in the node's
  // kept table (| kDiskSegment): any rank of the node can tell which kept file a record names.
  static constexpr std::uint32_t kKeptSegment = 1u << 30;
  static constexpr std::uint32_t kKeptNumberMask = kKeptSegment - 1;

  // `dir`: this node's files directory; `rank`: the owner, part of every segment's name;
  // `disk_dir`: the node's files directory on the disk tier (empty: none).
  Segments(std::string dir, int rank, std::string disk_dir = {})
      : dir_(std::move(dir)), disk_dir_(std::move(disk_dir)), rank_(rank) {}
  Segments(const Segments&) = delete;
  Segments& operator=(const Segments&) = delete;
  ~Segments() = default;

  struct Made {
    std::uint32_t id = 0;
    Arena* file = nullptr;  // the owner's read-write mapping
    std::string path;
  };
  // A new segment of exactly `size` bytes, backed now (a full file system fails here).
  Result<Made> create(std::uint64_t size);
  // Takes `file` (this user's, mode 0600, in the files directory) as a new segment: renamed to
  // the segment's name and mapped read-write at its present size.
  Result<Made> adopt(const std::string& file);
  // A kept store's file (runtime/tier/kept_store.hpp) as a new segment of this rank: linked
  // under the segment's name (the store keeps its own name), mapped read-write; never written.
  Result<Made> link_kept(const std::string& kept, bool disk, std::uint32_t number);
  // The mapping of this rank's segment `id`; null when there is none.
  const Arena* find(std::uint32_t id) const;
  // Unmaps and removes a segment that will not be published (a build that failed).
  void drop(std::uint32_t id) noexcept;

  const std::string& dir() const noexcept { return dir_; }
  const std::string& disk_dir() const noexcept { return disk_dir_; }
  // Whether segment `id` is one of this rank's linked kept files (not a file this job wrote).
  bool kept(std::uint32_t id) const;
  // The name of rank `rank`'s segment `id` in the files directory `dir`.
  static std::string path(const std::string& dir, int rank, std::uint32_t id);

 private:
  const std::string dir_;
  const std::string disk_dir_;
  const int rank_;
  std::atomic<std::uint32_t> next_id_{1};  // relaxed: ids only need to differ
  mutable std::mutex mu_;
  std::map<std::uint32_t, std::unique_ptr<Arena>> files_;  // guarded by mu_
  std::map<std::uint32_t, bool> kept_;                     // guarded by mu_: linked kept files
};

// Whether bytes at `tier` (and, for Tier::kFile, segment `segment`) are on a disk tier: this
// job's disk-tier arena, or a kept disk-tier file linked as a segment. Their pages may have to be
// loaded from the device, which is a hop into the node's memory that is checked
// (docs/architecture.md, "This job's own disk tier").
constexpr bool disk_backed(Tier tier, std::uint32_t segment) noexcept {
  return tier == Tier::kDisk || (tier == Tier::kFile && (segment & Segments::kDiskSegment) != 0);
}

}  // namespace larder

#endif  // LARDER_RUNTIME_TIER_SEGMENTS_HPP_
