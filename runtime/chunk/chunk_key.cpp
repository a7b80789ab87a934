#include "runtime/chunk/chunk_key.hpp"

#include <xxhash.h>

#include <cstring>

namespace larder {
namespace {

Key to_key(XXH128_hash_t h) noexcept {
  Key k{h.low64, h.high64, 0};
  if (k.word == 0) k.word = 1;  // 0 is the empty-slot marker
  k.home = k.word;
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
  Key k = to_key(XXH3_128bits(bytes, sizeof bytes));
  if (index == 0) k.home = file.lo;
  return k;
}

Key path_key(KeyKind kind, std::string_view path) noexcept {
  // Hash (path) seeded by the kind: distinct kinds never share keys.
  Key k = to_key(XXH3_128bits_withSeed(path.data(), path.size(), static_cast<XXH64_hash_t>(kind)));
  if (kind == KeyKind::kPath || kind == KeyKind::kLinkPath) k.home = file_id_of(path).lo;
  return k;
}

Key holder_key(const Key& chunk, std::uint64_t position) noexcept {
  unsigned char bytes[1 + 3 * sizeof(std::uint64_t)];
  bytes[0] = static_cast<unsigned char>(KeyKind::kHolder);
  std::memcpy(bytes + 1, &chunk.word, 8);
  std::memcpy(bytes + 9, &chunk.check, 8);
  std::memcpy(bytes + 17, &position, 8);
  return to_key(XXH3_128bits(bytes, sizeof bytes));
}

}  // namespace larder
