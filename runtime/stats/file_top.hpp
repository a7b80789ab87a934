// FileTop: the files that cost the parallel file system most, and the files whose reads fell
// back to it, in bounded memory per rank and summed over the job at finalize.
//
// The top lists are space-saving sketches (Metwally et al., "Efficient computation of frequent
// and top-k elements in data streams", 2005): kTopFiles entries per measure; a file not held
// replaces the smallest entry and starts from its count, so an entry's count is an upper bound,
// exact for files that stayed in the list. Sketches merge (sum the same paths, keep the largest),
// which an MPI reduction does over the job's ranks: fixed-size, trivially copyable records.
#ifndef LARDER_RUNTIME_STATS_FILE_TOP_HPP_
#define LARDER_RUNTIME_STATS_FILE_TOP_HPP_

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace larder {

// Why a read went to the PFS although the cache manages the file. Order of the counters
// fallback_causes.* (Counter::fallback_no_room ...).
enum class FallbackCause : std::uint32_t {
  kNoRoom,     // no memory or disk left to keep the chunk
  kChanged,    // the file changed during the job (another version, or shorter)
  kDirectory,  // the directory answered "read it yourself" (busy, refused, timed out)
  kTransport,  // copying from the holder failed (network, mapping)
  kIntegrity,  // the copy failed its content check
  kOther,
};
inline constexpr int kFallbackCauses = 6;
std::string_view cause_name(FallbackCause cause) noexcept;

inline constexpr std::size_t kFilePathBytes = 232;
inline constexpr std::size_t kTopFiles = 64;       // per measure, per rank and for the job
inline constexpr std::size_t kFallbackFiles = 16;  // distinct (file, cause) pairs

struct FileEntry {
  char path[kFilePathBytes];  // NUL-terminated; a longer path keeps its end, after "..."
  std::uint64_t bytes;
  std::uint64_t ops;
  std::uint64_t over;   // how much the list's measure may overstate (0: exact)
  std::uint32_t cause;  // FallbackCause (fallback list only)
  std::uint32_t used;   // 1 when the entry holds a file
};

// A rank's (or the job's) lists: one fixed-size block, reduced with merge_file_lists.
struct FileLists {
  std::array<FileEntry, kTopFiles> by_bytes;
  std::array<FileEntry, kTopFiles> by_ops;
  std::array<FileEntry, kFallbackFiles> fallbacks;
};

// Adds `from` to `into`: the same files summed, then the largest kept (fallbacks: the first).
void merge_file_lists(FileLists& into, const FileLists& from) noexcept;
void set_entry_path(FileEntry& e, std::string_view path) noexcept;

class FileTop {
 public:
  FileTop() noexcept;
  // One operation of the PFS on `path` that moved `bytes` (0 for metadata).
  void pfs_op(std::string_view path, std::uint64_t bytes) noexcept;
  // One read piece of `path` that fell back to the PFS.
  void fallback(std::string_view path, FallbackCause cause) noexcept;
  FileLists lists() const noexcept;

 private:
  mutable std::mutex mu_;
  FileLists lists_;  // guarded by mu_
};

}  // namespace larder

#endif  // LARDER_RUNTIME_STATS_FILE_TOP_HPP_
