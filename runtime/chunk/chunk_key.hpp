// Keys of directory entries: 128-bit xxHash (XXH3) values.
//
// `word` is the 64-bit value that claims a directory slot with one compare-and-swap and picks
// the home rank; `check` is the other half, compared after the slot is READY, so two names whose
// words collide are told apart (the reader then reads the PFS directly, never wrong bytes).
#ifndef LARDER_RUNTIME_CHUNK_CHUNK_KEY_HPP_
#define LARDER_RUNTIME_CHUNK_CHUNK_KEY_HPP_

#include <cstdint>
#include <string_view>

namespace larder {

struct Key {
  std::uint64_t word = 0;  // never 0: 0 marks an empty slot
  std::uint64_t check = 0;

  friend bool operator==(const Key&, const Key&) = default;
};

struct KeyHash {
  std::size_t operator()(const Key& k) const noexcept { return static_cast<std::size_t>(k.word); }
};

// What a directory entry describes; part of the hashed bytes so kinds never collide.
enum class KeyKind : std::uint8_t { kPath = 1, kChunk = 2, kListing = 3, kLinkPath = 4 };

// The identity of a file's contents: the hash of its canonical path.
struct FileId {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  friend bool operator==(const FileId&, const FileId&) = default;
};

FileId file_id_of(std::string_view canonical_path) noexcept;
// Key of chunk `index` of the file: xxHash of (canonical path hash, chunk index).
Key chunk_key(const FileId& file, std::uint64_t index) noexcept;
// Key of the metadata entry of a path as written (absolute, lexically clean).
Key path_key(KeyKind kind, std::string_view path) noexcept;

}  // namespace larder

#endif  // LARDER_RUNTIME_CHUNK_CHUNK_KEY_HPP_
