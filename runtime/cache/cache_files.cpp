// Node files (cache.hpp, Cache::node_file; docs/architecture.md, "Node files"): whole copies of
// managed files on a node, made once per node through the node table and the read path, so that
// mmap can map one copy whose pages the kernel shares between the node's processes.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <vector>

#include "runtime/cache/cache.hpp"
#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"
#include "runtime/common/unique_fd.hpp"

namespace larder {
namespace {

std::string node_file_name(const std::string& dir, const CachedFile& file) {
  char name[64];
  std::snprintf(
      name, sizeof name, "/%016llx%016llx-%016llx", static_cast<unsigned long long>(file.id.hi),
      static_cast<unsigned long long>(file.id.lo), static_cast<unsigned long long>(file.version));
  return dir + name;
}

Status write_at(int fd, std::span<const std::byte> bytes, std::uint64_t offset) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = sys::pwrite(fd, bytes.data() + done, bytes.size() - done,
                                  static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return from_errno(n < 0 ? errno : EIO, "cannot write a node file");
    done += static_cast<std::size_t>(n);
  }
  return {};
}

std::atomic<unsigned> g_scratch_serial{0};  // distinct scratch names within one process

}  // namespace

Result<std::string> Cache::node_file(const CachedFile& file) {
  if (node_files_dir_.empty() || closing()) {
    return Status(Errc::kUnavailable, 0, "node files are off");
  }
  const std::string name = node_file_name(node_files_dir_, file);
  const Key key = path_key(KeyKind::kNodeFile, name);
  Result<std::string> made = node_file_made(file, name, key);
  if (made.ok()) stats_.add(Counter::node_file_maps);
  return made;
}

Result<std::string> Cache::node_file_made(const CachedFile& file, const std::string& name,
                                          const Key& key) {
  Payload seen;
  if (memo_find(key, &seen)) return name;
  if (node_ == nullptr) {  // no node table: each process makes it (same bytes, atomic rename)
    if (Status s = build_node_file(file, name); !s.ok()) return s;
    memo_put(key, Payload{});
    return name;
  }
  const NodeTable::Found found = node_acquire(key, config_.wait_timeout);
  switch (found.outcome) {
    case NodeTable::Found::Outcome::kReady:
      memo_put(key, found.payload);
      return name;
    case NodeTable::Found::Outcome::kClaimed: {
      Status s = build_node_file(file, name);
      if (!s.ok()) {
        node_->fail(found.slot);  // the node's other processes do without it too
        return s;
      }
      node_->publish(found.slot, Payload{});
      memo_put(key, Payload{});
      return name;
    }
    case NodeTable::Found::Outcome::kFull:
      if (Status s = build_node_file(file, name); !s.ok()) return s;
      memo_put(key, Payload{});
      return name;
    case NodeTable::Found::Outcome::kFailed:
    case NodeTable::Found::Outcome::kTimeout:
      break;
  }
  return Status(Errc::kUnavailable, 0, "the node file of " + file.path + " could not be made");
}

Status Cache::build_node_file(const CachedFile& file, const std::string& name) {
  Arena* budget = tiers_.get(Tier::kMem);
  if (budget == nullptr) return {Errc::kUnavailable, 0, "no memory tier"};
  if (auto r = budget->reserve(file.size); !r.ok()) return r.status();
  const std::string scratch = name + ".part-" + std::to_string(::getpid()) + "-" +
                              std::to_string(g_scratch_serial.fetch_add(1));
  UniqueFd fd(sys::open(scratch.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return from_errno(errno, "cannot create node file " + scratch);
  auto discard = [&](Status s) {
    sys::unlink(scratch.c_str());
    LARDER_LOG_LIMITED(kInfo, "no node file for {}: {}", file.path, s.to_string());
    return s;
  };
  // Backed now: a full /dev/shm is an error here, never SIGBUS in a process that maps it.
  if (file.size > 0 && sys::fallocate(fd.get(), 0, 0, static_cast<off_t>(file.size)) != 0 &&
      errno != EOPNOTSUPP) {
    return discard(from_errno(errno, "cannot allocate node file " + scratch));
  }
  std::vector<std::byte> buf(std::min<std::uint64_t>(config_.chunk_size, file.size));
  for (std::uint64_t offset = 0; offset < file.size;) {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), file.size - offset));
    auto n = read(file, std::span(buf).first(want), offset);
    if (!n.ok()) return discard(n.status());
    if (*n != want)
      return discard(Status(Errc::kIoError, EIO, file.path + " is shorter than cached"));
    if (Status s = write_at(fd.get(), std::span(buf).first(want), offset); !s.ok()) {
      return discard(s);
    }
    offset += want;
  }
  if (::fchmod(fd.get(), 0400) != 0 || ::rename(scratch.c_str(), name.c_str()) != 0) {
    return discard(from_errno(errno, "cannot publish node file " + name));
  }
  stats_.add(Counter::node_files);
  stats_.add(Counter::node_file_bytes, file.size);
  return {};
}

}  // namespace larder
