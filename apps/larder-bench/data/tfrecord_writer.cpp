#include "apps/larder-bench/data/tfrecord_writer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "apps/larder-bench/data/crc32c.hpp"
#include "apps/larder-bench/data/output_file.hpp"

namespace larder::bench {
namespace {

constexpr std::size_t kChunk = 4 << 20;

void varint(std::string& s, std::uint64_t v) {
  while (v >= 0x80) {
    s += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  s += static_cast<char>(v);
}

std::uint64_t varint_size(std::uint64_t v) {
  std::uint64_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// tag + length prefix of a length-delimited field holding `len` bytes
std::string len_field(int field, std::uint64_t len) {
  std::string s;
  varint(s, (static_cast<std::uint64_t>(field) << 3) | 2);
  varint(s, len);
  return s;
}

std::span<const std::uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

}  // namespace

ExampleFrame example_frame(std::uint64_t image_bytes, std::int64_t size_value) {
  // 'image': Feature{bytes_list(1): BytesList{value(1): image}}
  const std::uint64_t bytes_list = 1 + varint_size(image_bytes) + image_bytes;
  const std::uint64_t image_feature = 1 + varint_size(bytes_list) + bytes_list;
  const std::string image_key = len_field(1, 5) + "image";
  const std::uint64_t image_entry =
      image_key.size() + 1 + varint_size(image_feature) + image_feature;
  // 'size': Feature{int64_list(3): Int64List{value(1), packed}}
  std::string packed;
  varint(packed, static_cast<std::uint64_t>(size_value));
  const std::string int64_list = len_field(1, packed.size()) + packed;
  const std::string size_feature = len_field(3, int64_list.size()) + int64_list;
  const std::string size_value_field = len_field(2, size_feature.size()) + size_feature;
  const std::string size_entry_body = len_field(1, 4) + "size" + size_value_field;
  const std::string size_entry = len_field(1, size_entry_body.size()) + size_entry_body;

  const std::uint64_t features = 1 + varint_size(image_entry) + image_entry + size_entry.size();
  ExampleFrame f;
  f.prefix = len_field(1, features);        // Example.features
  f.prefix += len_field(1, image_entry);    // Features.feature map entry
  f.prefix += image_key;                    //   key
  f.prefix += len_field(2, image_feature);  //   value: Feature
  f.prefix += len_field(1, bytes_list);     //     bytes_list
  f.prefix += len_field(1, image_bytes);    //       value
  f.suffix = size_entry;
  return f;
}

std::uint64_t tfrecord_record_size(std::uint64_t image_bytes, std::int64_t size_value) {
  const ExampleFrame f = example_frame(image_bytes, size_value);
  return 8 + 4 + f.prefix.size() + image_bytes + f.suffix.size() + 4;
}

Status write_tfrecord(const std::string& path, Dims dims, std::int64_t samples,
                      std::int64_t size_value, std::uint64_t seed, std::string& index_out) {
  auto file = OutputFile::create(path);
  if (!file.ok()) return file.status();
  OutputFile& out = file.value();
  const auto image = static_cast<std::uint64_t>(dims.bytes());
  const ExampleFrame frame = example_frame(image, size_value);
  const std::uint64_t data_len = frame.prefix.size() + image + frame.suffix.size();
  std::string head(8, '\0');
  for (int i = 0; i < 8; ++i) head[i] = static_cast<char>((data_len >> (8 * i)) & 0xff);
  const std::uint32_t len_crc = crc32c_mask(crc32c(bytes_of(head)));
  for (int i = 0; i < 4; ++i) head += static_cast<char>((len_crc >> (8 * i)) & 0xff);
  std::vector<std::uint8_t> buf(static_cast<std::size_t>(std::min<std::uint64_t>(image, kChunk)));
  index_out.clear();
  for (std::int64_t k = 0; k < samples; ++k) {
    const std::uint64_t start = out.position();
    Crc32c crc;
    crc.process_bytes(frame.prefix.data(), frame.prefix.size());
    Status s = out.write(head);
    if (s.ok()) s = out.write(frame.prefix);
    for (std::uint64_t off = 0; s.ok() && off < image; off += buf.size()) {
      const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(image - off, kChunk));
      const std::span<std::uint8_t> chunk(buf.data(), n);
      fill_content(seed, static_cast<std::uint64_t>(k) * image + off, chunk);
      crc.process_bytes(chunk.data(), chunk.size());
      s = out.write(chunk);
    }
    crc.process_bytes(frame.suffix.data(), frame.suffix.size());
    const std::uint32_t masked = crc32c_mask(crc.checksum());
    std::string tail = frame.suffix;
    for (int i = 0; i < 4; ++i) tail += static_cast<char>((masked >> (8 * i)) & 0xff);
    if (s.ok()) s = out.write(tail);
    if (!s.ok()) return s;
    index_out += fmt::format("{} {}\n", start, out.position() - start);
  }
  return out.close();
}

}  // namespace larder::bench
