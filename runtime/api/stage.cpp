#include "runtime/api/stage.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string_view>

namespace larder {
namespace {

constexpr int kMaxDepth = 256;  // a tree deeper than this is not walked further (counted skipped)

struct Entry {
  std::string name;
  unsigned char type = DT_UNKNOWN;
};

std::vector<Entry> entries_of(const Listing& listing) {
  std::vector<Entry> out;
  out.reserve(listing.count);
  for (const std::size_t pos : listing.offsets()) {
    const std::byte* rec = listing.records.data() + pos;
    Entry e;
    std::memcpy(&e.type, rec + offsetof(struct dirent64, d_type), sizeof e.type);
    const auto* name = reinterpret_cast<const char*>(rec + offsetof(struct dirent64, d_name));
    const std::size_t room = listing.records.size() - pos - offsetof(struct dirent64, d_name);
    e.name.assign(name, strnlen(name, room));
    if (e.name.empty() || e.name == "." || e.name == "..") continue;
    out.push_back(std::move(e));
  }
  // Sorted: the order does not depend on the file system's, and files of one directory are
  // staged next to each other.
  std::sort(out.begin(), out.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return out;
}

class Walker {
 public:
  Walker(FileService& svc, StageTotals& totals) : svc_(svc), totals_(totals) {}

  // Visits a root (`type` DT_UNKNOWN, symlinks followed: the user named it) or a directory
  // entry (`type` its d_type). Inside a tree only entries that are directories themselves are
  // walked, so a symlink cannot make a cycle; a symlink to a file stages the file.
  void visit(const std::string& path, int depth, unsigned char type, bool is_root) {
    if (depth > kMaxDepth) {
      ++totals_.skipped;
      return;
    }
    if (!is_root && type == DT_UNKNOWN) type = type_without_following(path);
    if (!is_root && type != DT_DIR && type != DT_REG && type != DT_LNK) {
      ++totals_.skipped;  // a FIFO, socket, device, or an entry that vanished
      return;
    }
    auto record = svc_.lookup(path);
    if (!record.ok() || record->error != 0 || !record->managed()) {
      ++totals_.skipped;
      return;
    }
    if (record->meta.is_directory() && (is_root || type == DT_DIR)) {
      walk_directory(path, depth);
    } else if (record->meta.is_regular() && record->meta.readable_by_me()) {
      files_.push_back(CachedFile::of(path, *record));
    } else {
      ++totals_.skipped;  // unreadable, special, or a symlink to a directory
    }
  }

  std::vector<CachedFile> take() { return std::move(files_); }

 private:
  // The d_type of an entry whose listing did not say (some file systems never do).
  unsigned char type_without_following(const std::string& path) {
    auto record = svc_.lookup_link(path);
    if (!record.ok() || record->error != 0) return DT_UNKNOWN;
    if (S_ISLNK(record->meta.mode)) return DT_LNK;
    if (record->meta.is_directory()) return DT_DIR;
    if (record->meta.is_regular()) return DT_REG;
    return DT_UNKNOWN;
  }

  void walk_directory(const std::string& path, int depth) {
    auto listing = svc_.list(path);
    if (!listing.ok() || *listing == nullptr || (*listing)->error != 0) {
      ++totals_.skipped;
      return;
    }
    const std::string base = path == "/" ? std::string() : path;
    for (const Entry& e : entries_of(**listing)) {
      visit(base + "/" + e.name, depth + 1, e.type, false);
    }
  }

  FileService& svc_;
  StageTotals& totals_;
  std::vector<CachedFile> files_;
};

}  // namespace

std::vector<CachedFile> stage_walk(FileService& svc, std::span<const std::string> roots,
                                   StageTotals& totals) {
  Walker walker(svc, totals);
  for (const std::string& root : roots) {
    if (root.empty()) {
      ++totals.skipped;  // a path the caller could not resolve
    } else {
      walker.visit(root, 0, DT_UNKNOWN, true);
    }
  }
  return walker.take();
}

void stage_load(Cache& cache, std::span<const CachedFile> files, int rank, int size,
                StageTotals& totals) {
  const std::uint64_t chunk = cache.chunk_size();
  const auto ranks = static_cast<std::uint64_t>(size);
  const auto me = static_cast<std::uint64_t>(rank);
  std::uint64_t g = 0;  // index of the chunk in the job-wide list
  for (const CachedFile& file : files) {
    ++totals.files;
    totals.bytes += file.size;
    const std::uint64_t n = (file.size + chunk - 1) / chunk;
    totals.chunks += n;
    for (std::uint64_t i = 0; i < n; ++i, ++g) {
      if (g % ranks != me) continue;
      auto placed = cache.place(file, i);
      // Not in any arena: the cache could not take it (budget, directory full, a failed load).
      if (!placed.ok() || placed->record.owner < 0) ++totals.not_cached;
    }
  }
}

}  // namespace larder
