// A shared-memory file that other processes may open at any moment, made whole before they can:
// written under a name of this process's, backed to its full size (fallocate: a full /dev/shm
// fails here, never as SIGBUS on a store later), then linked into place. Of two processes that
// make the same file, one link wins and both use the winner's.
#ifndef LARDER_RUNTIME_COMMON_WHOLE_FILE_HPP_
#define LARDER_RUNTIME_COMMON_WHOLE_FILE_HPP_

#include <cstddef>
#include <string>

#include "runtime/common/status.hpp"

namespace larder {

// Makes `path` (mode 0600) of `bytes` zeroed bytes unless it exists already; `what` names it in
// errors ("node table level", "prefetch marks").
Status create_whole_file(const std::string& path, std::size_t bytes, const std::string& what);

}  // namespace larder

#endif  // LARDER_RUNTIME_COMMON_WHOLE_FILE_HPP_
