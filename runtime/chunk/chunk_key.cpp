#include "runtime/chunk/chunk_key.hpp"

#include <xxhash.h>

#include <cstring>

namespace larder {
namespace {

Key to_key(XXH128_hash_t h) noexcept {
  Key k{h.low64, h.high64};
  if (k.word == 0) k.word = 1;  // 0 is the empty-slot marker
  return k;
}

}  // namespace

FileId file_id_of(std::string_view canonical_path) noexcept {
  const XXH128_hash_t h = XXH3_128bits(canonical_path.data(), canonical_path.size());
  return FileId{h.low64, h.high64};
}

Key chunk_key(const FileId& file, std::uint64_t index) noexcept {
  unsigned char bytes[1 + 3 * sizeof(std::uint64_t)];
  bytes[0] = static_cast<unsigned char>(KeyKind::kChunk);
  std::memcpy(bytes + 1, &file.lo, 8);
  std::memcpy(bytes + 9, &file.hi, 8);
  std::memcpy(bytes + 17, &index, 8);
  return to_key(XXH3_128bits(bytes, sizeof bytes));
}

Key path_key(KeyKind kind, std::string_view path) noexcept {
  // Hash (path) seeded by the kind: distinct kinds never share keys.
  return to_key(XXH3_128bits_withSeed(path.data(), path.size(), static_cast<XXH64_hash_t>(kind)));
}

}  // namespace larder
