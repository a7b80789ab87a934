#include "apps/larder-bench/data/output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace larder::bench {
namespace {

std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

void fill_content(std::uint64_t seed, std::uint64_t offset, std::span<std::uint8_t> out) noexcept {
  const std::uint64_t key = splitmix64(seed);
  std::size_t i = 0;
  for (; i < out.size() && (offset + i) % 8 != 0; ++i) {  // leading partial word
    const std::uint64_t pos = offset + i;
    out[i] = static_cast<std::uint8_t>(splitmix64(key ^ (pos / 8)) >> ((pos % 8) * 8));
  }
  for (; i + 8 <= out.size(); i += 8) {  // whole words, little-endian
    const std::uint64_t w = splitmix64(key ^ ((offset + i) / 8));
    std::memcpy(out.data() + i, &w, 8);
  }
  for (; i < out.size(); ++i) {
    const std::uint64_t pos = offset + i;
    out[i] = static_cast<std::uint8_t>(splitmix64(key ^ (pos / 8)) >> ((pos % 8) * 8));
  }
}

Result<OutputFile> OutputFile::create(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno_error(errno, "cannot create " + path);
  return OutputFile(fd, path);
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)),
      position_(other.position_) {}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);  // an error path already reported the real failure
}

Status OutputFile::write(std::span<const std::uint8_t> bytes) {
  if (Status s = pwrite(bytes, position_); !s.ok()) return s;
  position_ += bytes.size();
  return {};
}

Status OutputFile::write(std::string_view bytes) {
  return write(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

Status OutputFile::pwrite(std::span<const std::uint8_t> bytes, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n =
        ::pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno_error(errno, "cannot write " + path_);
    done += static_cast<std::size_t>(n);
  }
  return {};
}

Status OutputFile::close() {
  const int fd = std::exchange(fd_, -1);
  if (fd >= 0 && ::close(fd) != 0) return errno_error(errno, "cannot close " + path_);
  return {};
}

}  // namespace larder::bench
