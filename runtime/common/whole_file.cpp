#include "runtime/common/whole_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "runtime/common/sys.hpp"
#include "runtime/common/unique_fd.hpp"

namespace larder {

Status create_whole_file(const std::string& path, std::size_t bytes, const std::string& what) {
  const std::string tmp =
      path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(::gettid());
  UniqueFd made(sys::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!made.valid()) return from_errno(errno, "cannot create " + what + " " + tmp);
  if (sys::fallocate(made.get(), 0, 0, static_cast<off_t>(bytes)) != 0) {
    const int err = errno;
    sys::unlink(tmp.c_str());
    return from_errno(err, "cannot allocate " + what + " " + path);
  }
  const int linked = ::link(tmp.c_str(), path.c_str()) == 0 ? 0 : errno;
  sys::unlink(tmp.c_str());
  if (linked != 0 && linked != EEXIST) return from_errno(linked, "cannot link " + path);
  return {};
}

}  // namespace larder
