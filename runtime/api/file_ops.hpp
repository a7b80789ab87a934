// File operations over a Session, shaped like POSIX: the C API and the preload wrappers share
// them. Each try_* returns nullopt when the call is not Larder's to serve (unmanaged path, a
// descriptor that is not ours, flags the cache cannot honour): the caller then makes the real
// call. Otherwise it returns the POSIX result, with errno set on -1.
#ifndef LARDER_RUNTIME_API_FILE_OPS_HPP_
#define LARDER_RUNTIME_API_FILE_OPS_HPP_

#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>

#include "runtime/api/session.hpp"

namespace larder::ops {

// The absolute, lexically clean form of `path` if it lies under a prefix (or if no prefix is
// set and `any_when_unset`); nullopt otherwise.
std::optional<std::string> candidate(const Session& s, const char* path, bool any_when_unset);

std::optional<int> try_open(Session& s, const char* path, int flags, bool any_when_unset);
std::optional<int> try_close(Session& s, int fd);
std::optional<ssize_t> try_pread(Session& s, int fd, void* buf, size_t count, off_t offset);
std::optional<ssize_t> try_read(Session& s, int fd, void* buf, size_t count);
std::optional<off_t> try_lseek(Session& s, int fd, off_t offset, int whence);
std::optional<int> try_fstat(Session& s, int fd, struct stat* st);
std::optional<int> try_stat(Session& s, const char* path, struct stat* st, bool any_when_unset);

}  // namespace larder::ops

#endif  // LARDER_RUNTIME_API_FILE_OPS_HPP_
