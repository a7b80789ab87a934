#include "runtime/stats/file_top.hpp"

#include <algorithm>
#include <cstring>
#include <span>
#include <vector>

namespace larder {
namespace {

constexpr std::array<std::string_view, kFallbackCauses> kCauseNames = {
    "no_room", "changed", "directory", "transport", "integrity", "other"};

// Whether `e` holds the file whose stored path (set_entry_path's form) is `stored`.
bool holds(const FileEntry& e, const FileEntry& stored) noexcept {
  return std::strncmp(e.path, stored.path, kFilePathBytes) == 0;
}

using Measure = std::uint64_t FileEntry::*;

// Space-saving update of one sketch: add `bytes` and `ops` to `path`'s entry, or to a free one,
// or to the entry smallest by `measure` (which `path` takes over, counts carried: upper bounds).
void add_to(std::span<FileEntry> sketch, Measure measure, const FileEntry& file,
            std::uint64_t bytes, std::uint64_t ops) noexcept {
  FileEntry* target = nullptr;
  FileEntry* smallest = nullptr;
  for (FileEntry& e : sketch) {
    if (e.used == 0) {
      if (target == nullptr) target = &e;
      continue;
    }
    if (holds(e, file)) {
      target = &e;
      break;
    }
    if (smallest == nullptr || e.*measure < smallest->*measure) smallest = &e;
  }
  if (target == nullptr) target = smallest;
  if (target == nullptr) return;
  if (target->used == 0) {
    std::memcpy(target->path, file.path, kFilePathBytes);
    target->used = 1;
  } else if (!holds(*target, file)) {  // takes over the smallest: its count is carried
    std::memcpy(target->path, file.path, kFilePathBytes);
    target->over = target->*measure;
  }
  target->bytes += bytes;
  target->ops += ops;
}

void merge_top(std::span<FileEntry> into, std::span<const FileEntry> from, Measure measure) {
  std::vector<FileEntry> all(into.begin(), into.end());
  for (const FileEntry& f : from) {
    if (f.used == 0) continue;
    auto same = std::find_if(all.begin(), all.end(),
                             [&](const FileEntry& e) { return e.used != 0 && holds(e, f); });
    if (same != all.end()) {
      same->bytes += f.bytes;
      same->ops += f.ops;
      same->over += f.over;
    } else {
      all.push_back(f);
    }
  }
  std::stable_sort(all.begin(), all.end(), [measure](const FileEntry& a, const FileEntry& b) {
    if (a.used != b.used) return a.used > b.used;
    return a.*measure > b.*measure;
  });
  std::copy_n(all.begin(), into.size(), into.begin());
}

}  // namespace

std::string_view cause_name(FallbackCause cause) noexcept {
  const auto i = static_cast<std::size_t>(cause);
  return i < kCauseNames.size() ? kCauseNames[i] : "other";
}

void set_entry_path(FileEntry& e, std::string_view path) noexcept {
  std::memset(e.path, 0, kFilePathBytes);
  if (path.size() < kFilePathBytes) {
    std::memcpy(e.path, path.data(), path.size());
    return;
  }
  constexpr std::string_view kCut = "...";
  const std::size_t tail = kFilePathBytes - 1 - kCut.size();
  std::memcpy(e.path, kCut.data(), kCut.size());
  std::memcpy(e.path + kCut.size(), path.data() + path.size() - tail, tail);
}

void merge_file_lists(FileLists& into, const FileLists& from) noexcept {
  try {
    merge_top(into.by_bytes, from.by_bytes, &FileEntry::bytes);
    merge_top(into.by_ops, from.by_ops, &FileEntry::ops);
  } catch (...) {  // no memory for the merge: the lists keep what they had
  }
  for (const FileEntry& f : from.fallbacks) {
    if (f.used == 0) continue;
    FileEntry* free_slot = nullptr;
    bool merged = false;
    for (FileEntry& e : into.fallbacks) {
      if (e.used == 0) {
        if (free_slot == nullptr) free_slot = &e;
      } else if (e.cause == f.cause && holds(e, f)) {
        e.ops += f.ops;
        merged = true;
        break;
      }
    }
    if (!merged && free_slot != nullptr) *free_slot = f;
  }
}

FileTop::FileTop() noexcept : lists_{} {}

void FileTop::pfs_op(std::string_view path, std::uint64_t bytes) noexcept {
  FileEntry file{};  // the path in its stored form, made once
  set_entry_path(file, path);
  std::lock_guard lock(mu_);
  add_to(lists_.by_bytes, &FileEntry::bytes, file, bytes, 1);
  add_to(lists_.by_ops, &FileEntry::ops, file, bytes, 1);
}

void FileTop::fallback(std::string_view path, FallbackCause cause) noexcept {
  FileEntry file{};
  set_entry_path(file, path);
  std::lock_guard lock(mu_);
  FileEntry* free_slot = nullptr;
  for (FileEntry& e : lists_.fallbacks) {
    if (e.used == 0) {
      if (free_slot == nullptr) free_slot = &e;
    } else if (e.cause == static_cast<std::uint32_t>(cause) && holds(e, file)) {
      ++e.ops;
      return;
    }
  }
  if (free_slot == nullptr) return;  // the first kFallbackFiles files are named; counters count all
  std::memcpy(free_slot->path, file.path, kFilePathBytes);
  free_slot->cause = static_cast<std::uint32_t>(cause);
  free_slot->used = 1;
  free_slot->ops = 1;
}

FileLists FileTop::lists() const noexcept {
  std::lock_guard lock(mu_);
  return lists_;
}

}  // namespace larder
