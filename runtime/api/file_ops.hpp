// File operations over a FileService and a FileTable, shaped like POSIX: the C API and the
// preload wrappers share them. Each returns nullopt when the call is not Larder's to serve
// (unmanaged path, a descriptor that is not ours, flags the cache cannot honour): the caller
// then makes the real call. Otherwise it returns the POSIX result, with errno set on -1.
#ifndef LARDER_RUNTIME_API_FILE_OPS_HPP_
#define LARDER_RUNTIME_API_FILE_OPS_HPP_

#include <sys/stat.h>
#include <sys/types.h>

#include <optional>
#include <string>

#include "runtime/api/file_service.hpp"
#include "runtime/api/file_table.hpp"
#include "runtime/api/session.hpp"

namespace larder::ops {

// The absolute, lexically clean form of `path` if it lies under a prefix (or if no prefix is
// set and `any_when_unset`); nullopt otherwise.
std::optional<std::string> candidate(const Config& config, const char* path, bool any_when_unset);

// Flags the cache serves: read-only access plus flags that do not change what a read returns.
bool cacheable_flags(int flags) noexcept;

// `abs` is a candidate path (absolute, lexically clean, under a prefix).
std::optional<int> open_path(FileService& svc, FileTable& table, const std::string& abs, int flags);
std::optional<int> stat_path(FileService& svc, const std::string& abs, struct stat* st,
                             bool follow);

std::optional<int> try_close(FileTable& table, int fd);
std::optional<ssize_t> try_pread(FileService& svc, FileTable& table, int fd, void* buf,
                                 size_t count, off_t offset);
std::optional<ssize_t> try_read(FileService& svc, FileTable& table, int fd, void* buf,
                                size_t count);
std::optional<off_t> try_lseek(FileTable& table, int fd, off_t offset, int whence);
std::optional<int> try_fstat(FileTable& table, int fd, struct stat* st);

// Reads up to `count` bytes of `file` at `offset` through the service; -1 with errno.
ssize_t read_at(FileService& svc, const OpenFile& file, void* buf, size_t count,
                std::uint64_t offset);

// The C API's forms: over a session and its own table.
std::optional<int> try_open(Session& s, const char* path, int flags, bool any_when_unset);
std::optional<int> try_stat(Session& s, const char* path, struct stat* st, bool any_when_unset);

}  // namespace larder::ops

#endif  // LARDER_RUNTIME_API_FILE_OPS_HPP_
