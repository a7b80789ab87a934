#include "tests/support/data_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace larder::testing {
namespace {

std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

void write_data_file(const std::string& path, std::uint64_t size, std::uint64_t seed) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
  std::vector<std::uint64_t> block(1 << 16);
  std::uint64_t written = 0;
  std::uint64_t word = 0;
  while (written < size) {
    for (auto& w : block) w = mix(seed * 0x100000001B3ull + word++);
    const std::size_t n =
        static_cast<std::size_t>(std::min<std::uint64_t>(block.size() * 8, size - written));
    if (::write(fd, block.data(), n) != static_cast<ssize_t>(n)) {
      ::close(fd);
      throw std::runtime_error("cannot write " + path);
    }
    written += n;
  }
  ::close(fd);
}

std::vector<std::byte> direct_read(const std::string& path, std::uint64_t offset,
                                   std::size_t length) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
  std::vector<std::byte> out(length);
  std::size_t done = 0;
  while (done < length) {
    const ssize_t n =
        ::pread(fd, out.data() + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      ::close(fd);
      throw std::runtime_error("pread failed on " + path);
    }
    if (n == 0) break;
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  out.resize(done);
  return out;
}

std::vector<std::byte> read_whole(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw std::runtime_error("cannot stat " + path);
  return direct_read(path, 0, static_cast<std::size_t>(st.st_size));
}

}  // namespace larder::testing
