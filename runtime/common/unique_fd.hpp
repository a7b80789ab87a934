// UniqueFd: the one owner of a file descriptor. Move-only; closes through sys::close.
#ifndef LARDER_RUNTIME_COMMON_UNIQUE_FD_HPP_
#define LARDER_RUNTIME_COMMON_UNIQUE_FD_HPP_

#include <utility>

#include "runtime/common/sys.hpp"

namespace larder {

class UniqueFd {
 public:
  UniqueFd() noexcept = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  int release() noexcept { return std::exchange(fd_, -1); }
  void reset(int fd = -1) noexcept {
    if (fd_ >= 0) sys::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_COMMON_UNIQUE_FD_HPP_
