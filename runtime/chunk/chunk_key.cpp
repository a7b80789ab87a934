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

namespace {

// The key of three words under a kind (chunks, holders).
Key words_key(KeyKind kind, std::uint64_t a, std::uint64_t b, std::uint64_t c) noexcept {
  unsigned char bytes[1 + 3 * sizeof(std::uint64_t)];
  bytes[0] = static_cast<unsigned char>(kind);
  std::memcpy(bytes + 1, &a, 8);
  std::memcpy(bytes + 9, &b, 8);
  std::memcpy(bytes + 17, &c, 8);
  return to_key(XXH3_128bits(bytes, sizeof bytes));
}

}  // namespace

Key chunk_key(const FileId& file, std::uint64_t index) noexcept {
  Key k = words_key(KeyKind::kChunk, file.lo, file.hi, index);
  if (index == 0) k.home = file.lo;
  return k;
}

Key path_key(KeyKind kind, std::string_view path) noexcept {
  // Hash (path) seeded by the kind: distinct kinds never share keys.
  Key k = to_key(XXH3_128bits_withSeed(path.data(), path.size(), static_cast<XXH64_hash_t>(kind)));
  if (kind == KeyKind::kPath || kind == KeyKind::kLinkPath) k.home = file_id_of(path).lo;
  return k;
}

Key kept_key(const Key& chunk, std::uint64_t version) noexcept {
  return words_key(KeyKind::kKept, chunk.word, chunk.check, version);
}

Key holder_key(const Key& chunk, std::uint64_t position) noexcept {
  return words_key(KeyKind::kHolder, chunk.word, chunk.check, position);
}

Key bad_holder_key(const Key& chunk, std::uint64_t position) noexcept {
  Key k = words_key(KeyKind::kBadHolder, chunk.word, chunk.check, position);
  k.home = holder_key(chunk, position).home;
  return k;
}

Key group_key(const Key& key, std::uint64_t group, int home_rank) noexcept {
  Key k = words_key(KeyKind::kGroup, key.word, key.check, group);
  k.home = static_cast<std::uint64_t>(home_rank);
  return k;
}

Key segment_key(int owner, std::uint32_t segment) noexcept {
  Key k = words_key(KeyKind::kSegment, static_cast<std::uint64_t>(owner), segment, 0);
  k.home = static_cast<std::uint64_t>(owner);
  return k;
}

}  // namespace larder
