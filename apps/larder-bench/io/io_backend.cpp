#include "apps/larder-bench/io/io_backend.hpp"

#include <fcntl.h>
#include <larder/larder.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace larder::bench {
namespace {

// The file calls of one API: plain POSIX or Larder's look-alikes.
struct PosixCalls {
  static int open(const char* p, int flags) { return ::open(p, flags); }
  static ssize_t pread(int fd, void* b, size_t n, off_t o) { return ::pread(fd, b, n, o); }
  static int fstat(int fd, struct stat* st) { return ::fstat(fd, st); }
  static int close(int fd) { return ::close(fd); }
};
struct LarderCalls {
  static int open(const char* p, int flags) { return larder_open(p, flags); }
  static ssize_t pread(int fd, void* b, size_t n, off_t o) { return larder_pread(fd, b, n, o); }
  static int fstat(int fd, struct stat* st) { return larder_fstat(fd, st); }
  static int close(int fd) { return larder_close(fd); }
};

template <class Calls>
class DescriptorFile final : public InputFile {
 public:
  DescriptorFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  DescriptorFile(const DescriptorFile&) = delete;
  DescriptorFile& operator=(const DescriptorFile&) = delete;
  ~DescriptorFile() override { Calls::close(fd_); }  // read-only: close cannot lose data

  Result<std::size_t> pread(std::span<std::uint8_t> into, std::uint64_t offset) override {
    for (;;) {
      const ssize_t n = Calls::pread(fd_, into.data(), into.size(), static_cast<off_t>(offset));
      if (n >= 0) return static_cast<std::size_t>(n);
      if (errno != EINTR) return errno_error(errno, "cannot read " + path_);
    }
  }

  Result<std::uint64_t> size() override {
    struct stat st {};
    if (Calls::fstat(fd_, &st) != 0) return errno_error(errno, "cannot stat " + path_);
    return static_cast<std::uint64_t>(st.st_size);
  }

 private:
  int fd_;
  std::string path_;
};

template <class Calls>
class DescriptorBackend final : public IoBackend {
 public:
  explicit DescriptorBackend(int flags) : flags_(flags) {}
  Result<std::unique_ptr<InputFile>> open(const std::string& path) override {
    const int fd = Calls::open(path.c_str(), flags_);
    if (fd < 0) return errno_error(errno, "cannot open " + path);
    return std::unique_ptr<InputFile>(new DescriptorFile<Calls>(fd, path));
  }

 private:
  int flags_;
};

}  // namespace

std::unique_ptr<IoBackend> make_posix_backend(bool odirect) {
  return std::make_unique<DescriptorBackend<PosixCalls>>(O_RDONLY | O_CLOEXEC |
                                                         (odirect ? O_DIRECT : 0));
}

std::unique_ptr<IoBackend> make_larder_backend() {
  return std::make_unique<DescriptorBackend<LarderCalls>>(O_RDONLY);
}

}  // namespace larder::bench
