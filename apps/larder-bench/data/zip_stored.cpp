#include "apps/larder-bench/data/zip_stored.hpp"

#include <fmt/format.h>
#include <zlib.h>

namespace larder::bench {
namespace {

constexpr std::uint64_t kZip64Limit = (1ULL << 31) - 1;  // zipfile.ZIP64_LIMIT
constexpr std::uint8_t kZip64Version = 45;
constexpr std::uint16_t kDosDate1980 = (0 << 9) | (1 << 5) | 1;  // 1980-01-01
constexpr std::uint32_t kExternalAttr = 0600U << 16;
constexpr std::uint8_t kCreateSystemUnix = 3;

void put16(std::string& s, std::uint64_t v) {
  for (int i = 0; i < 2; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put32(std::string& s, std::uint64_t v) {
  for (int i = 0; i < 4; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put64(std::string& s, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
}
std::uint64_t clamp32(std::uint64_t v) {
  return v > kZip64Limit ? 0xffffffffULL : v;
}

}  // namespace

std::string ZipStoredWriter::local_header(const Member& m) const {
  const bool marked = style_ == ZipStyle::kModern || m.size > kZip64Limit;
  std::string h = "PK\x03\x04";
  put16(h, m.version);
  put16(h, 0);  // flags
  put16(h, 0);  // stored
  put16(h, 0);  // time 00:00:00
  put16(h, kDosDate1980);
  put32(h, m.crc);
  put32(h, marked ? 0xffffffffULL : m.size);  // compressed
  put32(h, marked ? 0xffffffffULL : m.size);  // uncompressed
  put16(h, m.name.size());
  put16(h, 20);  // extra: zip64 {id 1, 16 bytes, usize, csize}
  h += m.name;
  put16(h, 1);
  put16(h, 16);
  put64(h, m.size);
  put64(h, m.size);
  return h;
}

std::string ZipStoredWriter::central_header(const Member& m) const {
  std::string extra;
  if (m.size > kZip64Limit) {
    put64(extra, m.size);
    put64(extra, m.size);
  }
  if (m.offset > kZip64Limit) put64(extra, m.offset);
  std::string zip64;
  if (!extra.empty()) {
    put16(zip64, 1);
    put16(zip64, extra.size());
    zip64 += extra;
  }
  const std::uint8_t version = zip64.empty() ? m.version : kZip64Version;
  std::string h = "PK\x01\x02";
  h += static_cast<char>(version);
  h += static_cast<char>(kCreateSystemUnix);
  put16(h, version);  // version needed (reserved byte 0)
  put16(h, 0);
  put16(h, 0);
  put16(h, 0);
  put16(h, kDosDate1980);
  put32(h, m.crc);
  put32(h, clamp32(m.size));
  put32(h, clamp32(m.size));
  put16(h, m.name.size());
  put16(h, zip64.size());
  put16(h, 0);  // comment
  put16(h, 0);  // disk
  put16(h, 0);  // internal attributes
  put32(h, kExternalAttr);
  put32(h, clamp32(m.offset));
  return h + m.name + zip64;
}

std::string ZipStoredWriter::end_records(std::uint64_t cd_offset, std::uint64_t cd_size) const {
  std::string e;
  const std::uint64_t count = members_.size();
  if (cd_offset > kZip64Limit || cd_size > kZip64Limit || count > 0xffff) {
    const std::uint64_t zip64_end = cd_offset + cd_size;
    e += "PK\x06\x06";
    put64(e, 44);
    put16(e, kZip64Version);
    put16(e, kZip64Version);
    put32(e, 0);
    put32(e, 0);
    put64(e, count);
    put64(e, count);
    put64(e, cd_size);
    put64(e, cd_offset);
    e += "PK\x06\x07";
    put32(e, 0);
    put64(e, zip64_end);
    put32(e, 1);
  }
  e += "PK\x05\x06";
  put16(e, 0);
  put16(e, 0);
  put16(e, std::min<std::uint64_t>(count, 0xffff));
  put16(e, std::min<std::uint64_t>(count, 0xffff));
  put32(e, std::min<std::uint64_t>(cd_size, 0xffffffffULL));
  put32(e, std::min<std::uint64_t>(cd_offset, 0xffffffffULL));
  put16(e, 0);
  return e;
}

Status ZipStoredWriter::begin_member(const std::string& name, std::uint64_t size) {
  if (open_) return Status::error("zip: member " + members_.back().name + " is still open");
  Member m;
  m.name = name;
  m.size = size;
  m.offset = file_.position();
  m.crc = static_cast<std::uint32_t>(crc32_z(0, nullptr, 0));
  m.version = (style_ == ZipStyle::kModern || size > kZip64Limit) ? kZip64Version : 20;
  members_.push_back(m);
  written_ = 0;
  open_ = true;
  return file_.write(local_header(m));
}

Status ZipStoredWriter::write(std::span<const std::uint8_t> bytes) {
  Member& m = members_.back();
  m.crc = static_cast<std::uint32_t>(crc32_z(m.crc, bytes.data(), bytes.size()));
  written_ += bytes.size();
  return file_.write(bytes);
}

Status ZipStoredWriter::end_member() {
  const Member& m = members_.back();
  open_ = false;
  if (written_ != m.size) {
    return Status::error(
        fmt::format("zip: member {} has {} bytes, declared {}", m.name, written_, m.size));
  }
  const std::string header = local_header(m);  // now with the CRC
  return file_.pwrite(
      std::span(reinterpret_cast<const std::uint8_t*>(header.data()), header.size()), m.offset);
}

Status ZipStoredWriter::finish() {
  const std::uint64_t cd_offset = file_.position();
  std::string cd;
  for (const Member& m : members_) cd += central_header(m);
  if (Status s = file_.write(cd); !s.ok()) return s;
  return file_.write(end_records(cd_offset, cd.size()));
}

}  // namespace larder::bench
