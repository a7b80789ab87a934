#include <gtest/gtest.h>

#include <vector>

#include "runtime/chunk/chunk_key.hpp"
#include "runtime/chunk/chunk_math.hpp"

namespace larder {
namespace {

std::vector<ChunkPiece> pieces(std::uint64_t size, std::uint64_t chunk, std::uint64_t off,
                               std::uint64_t len) {
  std::vector<ChunkPiece> out;
  for_each_piece(ChunkGeometry{size, chunk}, off, len, [&](const ChunkPiece& p) {
    out.push_back(p);
    return true;
  });
  return out;
}

TEST(ChunkMathTest, CountsAndLengths) {
  ChunkGeometry g{10, 4};
  EXPECT_EQ(g.chunk_count(), 3u);
  EXPECT_EQ(g.chunk_length(0), 4u);
  EXPECT_EQ(g.chunk_length(2), 2u);
  EXPECT_EQ(g.chunk_length(3), 0u);
  EXPECT_EQ((ChunkGeometry{0, 4}.chunk_count()), 0u);
  EXPECT_EQ((ChunkGeometry{8, 4}.chunk_count()), 2u);
}

TEST(ChunkMathTest, ReadInsideOneChunk) {
  auto p = pieces(100, 16, 18, 5);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].index, 1u);
  EXPECT_EQ(p[0].offset_in_chunk, 2u);
  EXPECT_EQ(p[0].length, 5u);
  EXPECT_EQ(p[0].offset_in_buffer, 0u);
}

TEST(ChunkMathTest, ReadSpanningChunks) {
  auto p = pieces(100, 16, 10, 40);  // [10,50): chunk 0 [10,16), 1 whole, 2 whole, 3 [48,50)
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].index, 0u);
  EXPECT_EQ(p[0].length, 6u);
  EXPECT_EQ(p[1].index, 1u);
  EXPECT_EQ(p[1].offset_in_chunk, 0u);
  EXPECT_EQ(p[1].length, 16u);
  EXPECT_EQ(p[1].offset_in_buffer, 6u);
  EXPECT_EQ(p[3].index, 3u);
  EXPECT_EQ(p[3].length, 2u);
  EXPECT_EQ(p[3].offset_in_buffer, 38u);
}

TEST(ChunkMathTest, ReadIsClippedAtEndOfFile) {
  auto p = pieces(20, 16, 12, 100);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].length, 4u);
  EXPECT_EQ(p[1].length, 4u);
}

TEST(ChunkMathTest, ReadAtOrPastEndOfFileIsEmpty) {
  EXPECT_TRUE(pieces(20, 16, 20, 5).empty());
  EXPECT_TRUE(pieces(20, 16, 1000, 5).empty());
  EXPECT_TRUE(pieces(0, 16, 0, 5).empty());
  EXPECT_TRUE(pieces(20, 16, 3, 0).empty());
}

TEST(ChunkMathTest, OffsetsBeyondFourGiB) {
  const std::uint64_t size = (5ull << 30) + 123;
  auto p = pieces(size, 4u << 20, (4ull << 30) - 10, 20);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].index, 1023u);
  EXPECT_EQ(p[1].index, 1024u);
  EXPECT_EQ(p[1].offset_in_chunk, 0u);
  EXPECT_EQ(p[1].length, 10u);
}

TEST(ChunkKeyTest, KeysDependOnPathAndIndex) {
  const FileId a = file_id_of("/lus/data/a");
  const FileId b = file_id_of("/lus/data/b");
  EXPECT_NE(a, b);
  EXPECT_EQ(chunk_key(a, 0), chunk_key(file_id_of("/lus/data/a"), 0));
  EXPECT_NE(chunk_key(a, 0), chunk_key(a, 1));
  EXPECT_NE(chunk_key(a, 0), chunk_key(b, 0));
  EXPECT_NE(chunk_key(a, 0).word, 0u);
}

TEST(ChunkKeyTest, PathKeysOfDifferentKindsDiffer) {
  EXPECT_NE(path_key(KeyKind::kPath, "/x"), path_key(KeyKind::kListing, "/x"));
  EXPECT_NE(path_key(KeyKind::kPath, "/x"), path_key(KeyKind::kPath, "/y"));
}

}  // namespace
}  // namespace larder
