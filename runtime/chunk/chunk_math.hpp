// Chunk arithmetic: which chunks a byte range touches and where each piece lands.
#ifndef LARDER_RUNTIME_CHUNK_CHUNK_MATH_HPP_
#define LARDER_RUNTIME_CHUNK_CHUNK_MATH_HPP_

#include <algorithm>
#include <cstdint>

namespace larder {

struct ChunkGeometry {
  std::uint64_t file_size = 0;
  std::uint64_t chunk_size = 0;

  std::uint64_t chunk_count() const noexcept {
    return file_size == 0 ? 0 : (file_size + chunk_size - 1) / chunk_size;
  }
  // Bytes in chunk `index` (the last one may be short).
  std::uint64_t chunk_length(std::uint64_t index) const noexcept {
    const std::uint64_t begin = index * chunk_size;
    if (begin >= file_size) return 0;
    return std::min(chunk_size, file_size - begin);
  }
};

// One piece of a read: bytes [offset_in_chunk, offset_in_chunk + length) of chunk `index`
// go to the caller's buffer at `offset_in_buffer`.
struct ChunkPiece {
  std::uint64_t index;
  std::uint64_t offset_in_chunk;
  std::uint64_t length;
  std::uint64_t offset_in_buffer;
};

// Iterates the pieces of reading `length` bytes at `offset`, clipped at end of file.
template <class Fn>
void for_each_piece(const ChunkGeometry& g, std::uint64_t offset, std::uint64_t length, Fn&& fn) {
  if (offset >= g.file_size || length == 0) return;
  const std::uint64_t end = offset + std::min(length, g.file_size - offset);
  std::uint64_t pos = offset;
  while (pos < end) {
    const std::uint64_t index = pos / g.chunk_size;
    const std::uint64_t in_chunk = pos - index * g.chunk_size;
    const std::uint64_t n = std::min(g.chunk_size - in_chunk, end - pos);
    if (!fn(ChunkPiece{index, in_chunk, n, pos - offset})) return;
    pos += n;
  }
}

}  // namespace larder

#endif  // LARDER_RUNTIME_CHUNK_CHUNK_MATH_HPP_
