#include "runtime/pfs/file_copy.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "runtime/common/sys.hpp"
#include "runtime/common/unique_fd.hpp"

namespace larder {
namespace {

std::atomic<unsigned> g_serial{0};  // distinct temporary names within one process

Status io_error(int err, const std::string& what) {
  return {Errc::kIoError, err, what + ": " + std::strerror(err)};
}

}  // namespace

std::string parent_of(const std::string& path) {
  const std::size_t at = path.rfind('/');
  return at == 0 || at == std::string::npos ? std::string("/") : path.substr(0, at);
}

std::string name_of(const std::string& path) {
  return path.substr(path.rfind('/') + 1);
}

Status copy_file_atomically(const std::string& from, const std::string& to, std::uint32_t mode,
                            FileMeta* meta) {
  const std::string tmp = parent_of(to) + "/." + name_of(to) + ".larder-" +
                          std::to_string(::getpid()) + "-" + std::to_string(g_serial.fetch_add(1));
  UniqueFd in(sys::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.valid()) return io_error(errno, "cannot read " + from);
  struct stat st {};
  if (sys::fstat(in.get(), &st) != 0) return io_error(errno, "cannot stat " + from);
  UniqueFd out(sys::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 07777));
  if (!out.valid()) return io_error(errno, "cannot create " + tmp);
  auto fail = [&tmp](int err, const std::string& what) {
    sys::unlink(tmp.c_str());
    return io_error(err, what);
  };
  off_t at = 0;
  const auto size = static_cast<off_t>(st.st_size);
  while (at < size) {
    const ssize_t n = sys::sendfile(out.get(), in.get(), &at, static_cast<std::size_t>(size - at));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return fail(n < 0 ? errno : EIO, "cannot write " + tmp);
  }
  // The mode asked for (umask applied by the caller), whatever the file system's default.
  if (sys::fchmod(out.get(), mode & 07777) != 0)
    return fail(errno, "cannot set the mode of " + tmp);
  if (sys::close(out.release()) != 0) return fail(errno, "cannot write " + tmp);
  if (sys::rename(tmp.c_str(), to.c_str()) != 0) return fail(errno, "cannot rename to " + to);
  if (meta != nullptr) {
    struct stat done {};
    if (sys::stat(to.c_str(), &done) != 0) return io_error(errno, "cannot stat " + to);
    *meta = FileMeta::from_stat(done);
  }
  return {};
}

}  // namespace larder
