// The sample file formats byte for byte: np.savez's zip (the reference hexdump of
// np.savez(x=uint8 zeros(64, 64, 1), y=[0]) with current CPython, and Debian bookworm's
// CPython 3.11.2 variant), the .npy header, TFRecord framing and DLIO's record sizes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "apps/larder-bench/data/crc32c.hpp"
#include "apps/larder-bench/data/npy_format.hpp"
#include "apps/larder-bench/data/npz_writer.hpp"
#include "apps/larder-bench/data/tfrecord_writer.hpp"
#include "apps/larder-bench/io/tfrecord_stream.hpp"
#include "tests/support/temp_dir.hpp"

namespace larder::bench {
namespace {

std::string hex(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i + 1 < text.size();) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    out += static_cast<char>(std::stoi(std::string(text.substr(i, 2)), nullptr, 16));
    i += 2;
  }
  return out;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const ContentFn kZeros = [](std::uint64_t, std::span<std::uint8_t> out) {
  std::fill(out.begin(), out.end(), 0);
};

// np.savez(x=np.zeros((64, 64, 1), np.uint8), y=[0]); `v` is the zip version byte.
std::string expected_npz(bool modern) {
  const std::string v = modern ? "2d" : "14";
  const std::string x_sizes = modern ? "ff ff ff ff ff ff ff ff" : "80 10 00 00 80 10 00 00";
  const std::string y_sizes = modern ? "ff ff ff ff ff ff ff ff" : "88 00 00 00 88 00 00 00";
  const std::string crc_x = "29 c2 0e 1c";
  const std::string crc_y = "a0 9a be 92";
  std::string f =
      hex("50 4b 03 04 " + v + " 00 00 00 00 00 00 00 21 00 " + crc_x + x_sizes + "05 00 14 00") +
      "x.npy" + hex("01 00 10 00 80 10 00 00 00 00 00 00 80 10 00 00 00 00 00 00");
  f += npy_header("|u1", {64, 64, 1}) + std::string(4096, '\0');
  f += hex("50 4b 03 04 " + v + " 00 00 00 00 00 00 00 21 00 " + crc_y + y_sizes + "05 00 14 00") +
       "y.npy" + hex("01 00 10 00 88 00 00 00 00 00 00 00 88 00 00 00 00 00 00 00");
  f += npy_header("<i8", {1}) + std::string(8, '\0');
  f += hex("50 4b 01 02 " + v + " 03 " + v + " 00 00 00 00 00 00 00 21 00 " + crc_x +
           "80 10 00 00 80 10 00 00 05 00 00 00 00 00 00 00 00 00 00 00 80 01 00 00 00 00") +
       "x.npy";
  f += hex("50 4b 01 02 " + v + " 03 " + v + " 00 00 00 00 00 00 00 21 00 " + crc_y +
           "88 00 00 00 88 00 00 00 05 00 00 00 00 00 00 00 00 00 00 00 80 01 b7 10 00 00") +
       "y.npy";
  f += hex("50 4b 05 06 00 00 00 00 02 00 02 00 66 00 00 00 76 11 00 00 00 00");
  return f;
}

TEST(NpyHeaderTest, IsNumpysHeader) {
  const std::string h = npy_header("|u1", {64, 64, 1});
  ASSERT_EQ(h.size(), 128u);
  EXPECT_EQ(h.substr(0, 10), std::string("\x93NUMPY\x01\x00\x76\x00", 10));
  EXPECT_EQ(h.substr(10, 64), "{'descr': '|u1', 'fortran_order': False, 'shape': (64, 64, 1), }");
  EXPECT_EQ(h.find_first_not_of(' ', 74), 127u);
  EXPECT_EQ(h.back(), '\n');
  EXPECT_EQ(npy_header("<i8", {1}).substr(10, 57),
            "{'descr': '<i8', 'fortran_order': False, 'shape': (1,), }");
  EXPECT_EQ(npy_header("|u1", {15865, 14125, 1}).size(), 128u);  // unet3d file 0
}

TEST(NpzWriterTest, MatchesTheReferenceHexdumpByteForByte) {
  testing::TempDir dir("lbp-npz");
  const std::string path = dir / "ref.npz";
  ASSERT_TRUE(write_npz(path, {64, 64}, 1, kZeros, ZipStyle::kModern).ok());
  const std::string got = read_all(path);
  EXPECT_EQ(got.size(), 4594u);  // 64 * 64 + 498
  EXPECT_EQ(got, expected_npz(true));
}

TEST(NpzWriterTest, LegacyStyleMatchesOlderCpython) {
  testing::TempDir dir("lbp-npz");
  const std::string path = dir / "ref.npz";
  ASSERT_TRUE(write_npz(path, {64, 64}, 1, kZeros, ZipStyle::kLegacy).ok());
  EXPECT_EQ(read_all(path), expected_npz(false));
}

TEST(NpzWriterTest, SizeIsPixelsPlusEightPerSamplePlus490) {
  testing::TempDir dir("lbp-npz");
  const std::string path = dir / "s.npz";
  ASSERT_TRUE(write_npz(path, {100, 37}, 3, seeded_content(1), ZipStyle::kModern).ok());
  EXPECT_EQ(read_all(path).size(), 100u * 37 * 3 + 8 * 3 + 490);
}

TEST(Crc32cTest, MatchesTheCheckValue) {
  const std::string s = "123456789";
  EXPECT_EQ(crc32c({reinterpret_cast<const std::uint8_t*>(s.data()), s.size()}), 0xe3069283U);
  // pieces give the whole's checksum (the TFRecord writer feeds a record in pieces)
  Crc32c pieces;
  pieces.process_bytes(s.data(), 4);
  pieces.process_bytes(s.data() + 4, s.size() - 4);
  EXPECT_EQ(pieces.checksum(), 0xe3069283U);
}

TEST(TfRecordTest, RecordSizesMatchDlio) {
  EXPECT_EQ(tfrecord_record_size(338 * 338, 114244), 114304u);      // resnet50, DLIO main
  EXPECT_EQ(tfrecord_record_size(338 * 338, 338), 114303u);         // resnet50, mlperf v2.0
  EXPECT_EQ(tfrecord_record_size(1709 * 1696, 2898464), 2898530u);  // cosmoflow file 0
  EXPECT_EQ(tfrecord_record_size(1709 * 1696, 1681), 2898528u);
}

TEST(TfRecordTest, WrittenFileHasValidFramingAndReadsBack) {
  testing::TempDir dir("lbp-tfr");
  const std::string path = dir / "a.tfrecord";
  std::string index;
  ASSERT_TRUE(write_tfrecord(path, {100, 100}, 3, 24, 5, index).ok());
  const std::string bytes = read_all(path);
  const std::uint64_t record = tfrecord_record_size(10000, 24);
  ASSERT_EQ(bytes.size(), 3 * record);
  EXPECT_EQ(index, fmt::format("0 {0}\n{0} {0}\n{1} {0}\n", record, 2 * record));
  // header: u64 length, masked crc32c of it; trailer: masked crc32c of the data
  const auto* p = reinterpret_cast<const std::uint8_t*>(bytes.data());
  std::uint64_t len = 0;
  for (int i = 7; i >= 0; --i) len = (len << 8) | p[i];
  EXPECT_EQ(len, record - 16);
  auto u32_at = [&](std::size_t off) {
    return std::uint32_t(p[off]) | std::uint32_t(p[off + 1]) << 8 |
           std::uint32_t(p[off + 2]) << 16 | std::uint32_t(p[off + 3]) << 24;
  };
  EXPECT_EQ(u32_at(8), crc32c_mask(crc32c({p, 8})));
  EXPECT_EQ(u32_at(12 + len), crc32c_mask(crc32c({p + 12, len})));

  auto io = make_posix_backend(false);
  auto stream = TfRecordStream::open(*io, path, 4096);  // records straddle buffer refills
  ASSERT_TRUE(stream.ok());
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(stream.value()->next_record().value());
  EXPECT_FALSE(stream.value()->next_record().value());
  EXPECT_EQ(stream.value()->bytes_read(), bytes.size());
}

}  // namespace
}  // namespace larder::bench
