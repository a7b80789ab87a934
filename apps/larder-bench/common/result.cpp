#include "apps/larder-bench/common/result.hpp"

#include <cstring>

namespace larder::bench {

Status errno_error(int err, std::string_view what) {
  char buf[256];
  // GNU strerror_r returns the message (maybe not in buf).
  const char* text = ::strerror_r(err, buf, sizeof buf);
  return Status::error(std::string(what) + ": " + text);
}

}  // namespace larder::bench
