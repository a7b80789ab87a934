#include "runtime/cache/records.hpp"

#include <xxhash.h>

#include <array>

namespace larder {

std::uint64_t file_version(const FileMeta& meta) noexcept {
  const std::array<std::uint64_t, 4> words{meta.ino, meta.size,
                                           static_cast<std::uint64_t>(meta.mtime_ns),
                                           static_cast<std::uint64_t>(meta.ctime_ns)};
  const std::uint64_t h = XXH3_64bits(words.data(), sizeof(words));
  return h == 0 ? 1 : h;
}

std::uint64_t PathRecord::version() const noexcept {
  return error == 0 && meta.is_regular() ? file_version(meta) : 0;
}

bool PathRecord::same_as(const PathRecord& other) const noexcept {
  if (error != other.error) return false;
  if (error != 0) return true;
  return meta.mode == other.meta.mode && file == other.file && version() == other.version();
}

}  // namespace larder
