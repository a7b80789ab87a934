#include "runtime/cache/listing.hpp"

#include <dirent.h>

#include <cstddef>
#include <cstring>

namespace larder {
namespace {

constexpr std::size_t kHeader = offsetof(struct dirent64, d_name);

}  // namespace

bool Listing::adopt(std::vector<std::byte> raw) {
  std::size_t pos = 0;
  std::size_t n = 0;
  while (pos < raw.size()) {
    if (raw.size() - pos < kHeader) return false;
    struct dirent64 head;
    std::memcpy(&head, raw.data() + pos, kHeader);
    if (head.d_reclen < kHeader + 1 || head.d_reclen > raw.size() - pos) return false;
    const auto ordinal = static_cast<std::int64_t>(++n);
    std::memcpy(raw.data() + pos + offsetof(struct dirent64, d_off), &ordinal, sizeof ordinal);
    pos += head.d_reclen;
  }
  records = std::move(raw);
  count = n;
  error = 0;
  return true;
}

std::vector<std::size_t> Listing::offsets() const {
  std::vector<std::size_t> out;
  out.reserve(count);
  std::size_t pos = 0;
  while (pos + kHeader <= records.size()) {
    out.push_back(pos);
    unsigned short reclen = 0;
    std::memcpy(&reclen, records.data() + pos + offsetof(struct dirent64, d_reclen), sizeof reclen);
    if (reclen == 0) break;
    pos += reclen;
  }
  return out;
}

std::vector<std::string> Listing::names() const {
  std::vector<std::string> out;
  out.reserve(count);
  for (std::size_t pos : offsets()) {
    const char* name =
        reinterpret_cast<const char*>(records.data() + pos + offsetof(struct dirent64, d_name));
    unsigned short reclen = 0;
    std::memcpy(&reclen, records.data() + pos + offsetof(struct dirent64, d_reclen), sizeof reclen);
    const std::size_t room = reclen - offsetof(struct dirent64, d_name);
    const std::string n(name, strnlen(name, room));
    if (n != "." && n != "..") out.push_back(n);
  }
  return out;
}

std::size_t Listing::files() const {
  std::size_t n = 0;
  for (std::size_t pos : offsets()) {
    unsigned char type = DT_UNKNOWN;
    std::memcpy(&type, records.data() + pos + offsetof(struct dirent64, d_type), sizeof type);
    if (type == DT_REG || type == DT_LNK || type == DT_UNKNOWN) ++n;
  }
  return n;
}

}  // namespace larder
