// Keys of directory entries: 128-bit xxHash (XXH3) values.
//
// `word` is the 64-bit value that claims a directory slot with one compare-and-swap; `check` is the
// other half, compared after the slot is READY, so two names whose words collide are told apart
// (the reader then reads the PFS directly, never wrong bytes). `home` picks the rank whose shard
// holds the entry (home % ranks): the key's own word, except where two entries are looked up
// together and so live on one rank (docs/protocol.md, "Small files": a path's record and chunk 0
// of the file it names).
#ifndef LARDER_RUNTIME_CHUNK_CHUNK_KEY_HPP_
#define LARDER_RUNTIME_CHUNK_CHUNK_KEY_HPP_

#include <cstdint>
#include <string_view>

namespace larder {

struct Key {
  std::uint64_t word = 0;  // never 0: 0 marks an empty slot
  std::uint64_t check = 0;
  std::uint64_t home = 0;  // the home rank is home % ranks

  friend bool operator==(const Key&, const Key&) = default;
};

struct KeyHash {
  std::size_t operator()(const Key& k) const noexcept { return static_cast<std::size_t>(k.word); }
};

// What a directory entry describes; part of the hashed bytes so kinds never collide.
enum class KeyKind : std::uint8_t {
  kPath = 1,
  kChunk = 2,
  kListing = 3,
  kLinkPath = 4,
  kHolder = 5,      // a node's copy of a chunk: where it sits, for the nodes it serves (fan-out)
  kNodeFile = 6,    // a whole file copied to a node (node tables only): its name is derived
  kSegment = 7,     // how other ranks reach a rank's segment (runtime/tier/segments.hpp)
  kGroup = 8,       // a node group's answer for a key (LARDER_GROUP): its representative's
  kKeptFile = 9,    // a kept store's file on a node (node tables only): who adopted it, or evicted
  kKept = 10,       // a chunk a node kept from an earlier step, for one file version: where it is
  kBadHolder = 11,  // a holder of a chunk's fan-out tree whose copy failed its hash check
};

// The identity of a file's contents: the hash of its canonical path.
struct FileId {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
  friend bool operator==(const FileId&, const FileId&) = default;
};

FileId file_id_of(std::string_view canonical_path) noexcept;
// Key of chunk `index` of the file: xxHash of (canonical path hash, chunk index). Chunk 0 is homed
// with the file's path record (the path as canonical name); the others by their own hash.
Key chunk_key(const FileId& file, std::uint64_t index) noexcept;
// Key of the metadata entry of a path as written (absolute, lexically clean). kPath and kLinkPath
// entries are homed by file_id_of(path), with chunk 0 of the file the path names when it is
// canonical; listings by their own hash.
Key path_key(KeyKind kind, std::string_view path) noexcept;
// Key of the record of the copy of chunk `chunk` held at fan-out position `position` (>= 1).
Key holder_key(const Key& chunk, std::uint64_t position) noexcept;
// Key of the mark that the holder at fan-out position `position` of chunk `chunk` served bytes
// that do not match the chunk's hash; homed with that holder's entry, so a reader looks both up
// in one round trip.
Key bad_holder_key(const Key& chunk, std::uint64_t position) noexcept;
// Key of the record of rank `owner`'s segment `segment` (its transport descriptor), homed at the
// owner itself.
Key segment_key(int owner, std::uint32_t segment) noexcept;
// Key of the entry that says where a kept copy of chunk `chunk` of file version `version` sits
// (published at a step's start by the node that kept it: Cache::publish_kept).
Key kept_key(const Key& chunk, std::uint64_t version) noexcept;
// Key of node group `group`'s entry for `key`, homed at `home_rank` (a rank of the group).
Key group_key(const Key& key, std::uint64_t group, int home_rank) noexcept;

}  // namespace larder

#endif  // LARDER_RUNTIME_CHUNK_CHUNK_KEY_HPP_
