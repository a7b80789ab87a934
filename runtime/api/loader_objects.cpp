#include "runtime/api/loader_objects.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "runtime/api/file_service.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"
#include "runtime/path/path.hpp"

namespace larder {
namespace {

// mkdir -p of `dir` below `root` (which exists); EEXIST is fine (another process made it).
Status make_dirs(const std::string& root, const std::string& dir) {
  for (std::size_t at = root.size() + 1; at <= dir.size(); ++at) {
    if (at != dir.size() && dir[at] != '/') continue;
    const std::string part = dir.substr(0, at);
    if (sys::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      return from_errno(errno, "cannot create loader directory " + part);
    }
  }
  return {};
}

bool same_inode(const std::string& a, const std::string& b) {
  struct stat sa {};
  struct stat sb {};
  return sys::lstat(a.c_str(), &sa) == 0 && sys::lstat(b.c_str(), &sb) == 0 &&
         sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

// `<root><original>`, a hard link of `node_file` (replaced when it links an older version).
Result<std::string> tree_name(const std::string& root, const std::string& original,
                              const std::string& node_file) {
  const std::string name = root + original;
  if (same_inode(name, node_file)) return name;
  if (Status s = make_dirs(root, name.substr(0, name.rfind('/'))); !s.ok()) return s;
  if (sys::link(node_file.c_str(), name.c_str()) == 0) return name;
  if (errno != EEXIST) return from_errno(errno, "cannot link " + name);
  if (same_inode(name, node_file)) return name;  // another process of the node linked it
  // An older version's link: replace it atomically (a process that opened it keeps its copy).
  const std::string scratch = name + ".new-" + std::to_string(::getpid());
  if (sys::link(node_file.c_str(), scratch.c_str()) != 0 && errno != EEXIST) {
    return from_errno(errno, "cannot link " + scratch);
  }
  if (sys::rename(scratch.c_str(), name.c_str()) != 0) {
    const int err = errno;
    sys::unlink(scratch.c_str());
    return from_errno(err, "cannot replace " + name);
  }
  return name;
}

// Whether the file starts with the ELF magic.
bool is_elf(const std::string& file) {
  const int fd = sys::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char magic[4] = {};
  const ssize_t n = sys::pread_full(fd, magic, sizeof magic, 0);
  sys::close(fd);
  return n == static_cast<ssize_t>(sizeof magic) && std::memcmp(magic,
                                                                "\x7f"
                                                                "ELF",
                                                                4) == 0;
}

}  // namespace

std::string object_original(std::string_view root, std::string_view candidate) {
  if (candidate.empty() || candidate.front() != '/') return std::string(candidate);
  if (!root.empty() && candidate.size() > root.size() && candidate.starts_with(root) &&
      candidate[root.size()] == '/') {
    candidate.remove_prefix(root.size());
  }
  return path::lexically_normal(candidate);
}

Result<ObjectAnswer> find_object(FileService& svc, const std::string& root,
                                 std::string_view candidate, bool exact) {
  ObjectAnswer answer;
  answer.path = object_original(root, candidate);
  if (answer.path.empty() || answer.path.front() != '/') return answer;
  const Config& config = svc.config();
  if (!config.lexically_managed(answer.path)) return answer;
  auto record = svc.lookup(answer.path);
  if (!record.ok()) return record.status();
  if (record->error != 0) {
    answer.kind = ObjectKind::kAbsent;
    answer.error = record->error;
    return answer;
  }
  if (!record->managed() || !record->meta.is_regular() || !record->meta.readable_by_me()) {
    return answer;  // the loader's own checks and errors, on the original
  }
  // Node files must be mappable for execution: on a noexec mount the loader's mapping of the
  // copy would fail, and that load with it (glibc tries no other candidate).
  if (root.empty()) return answer;
  auto node_file = svc.node_file(CachedFile::of(answer.path, *record));
  if (!node_file.ok()) return node_file.status();
  // Not an ELF object (a linker script named .so, a truncated file): the loader's own error
  // text, about the original. (Read from the node file: the chunks are there, not twice.)
  if (!is_elf(*node_file)) return answer;
  if (!exact) {
    answer.kind = ObjectKind::kNodeCopy;
    answer.path = std::move(*node_file);
    return answer;
  }
  auto name = tree_name(root, answer.path, *node_file);
  if (!name.ok()) {
    LARDER_LOG_LIMITED(kInfo, "{} loads from its original path: {}", answer.path,
                       name.status().to_string());
    return name.status();
  }
  answer.kind = ObjectKind::kNodeCopy;
  answer.path = std::move(*name);
  return answer;
}

}  // namespace larder
