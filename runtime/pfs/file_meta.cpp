#include "runtime/pfs/file_meta.hpp"

#include <unistd.h>

#include <cstring>
#include <vector>

namespace larder {
namespace {

constexpr std::int64_t kNsPerSec = 1'000'000'000;

std::int64_t to_ns(const struct timespec& ts) noexcept {
  return static_cast<std::int64_t>(ts.tv_sec) * kNsPerSec + ts.tv_nsec;
}

struct timespec from_ns(std::int64_t ns) noexcept {
  struct timespec ts {};
  ts.tv_sec = static_cast<time_t>(ns / kNsPerSec);
  ts.tv_nsec = static_cast<long>(ns % kNsPerSec);
  if (ts.tv_nsec < 0) {
    ts.tv_nsec += kNsPerSec;
    ts.tv_sec -= 1;
  }
  return ts;
}

bool in_my_groups(gid_t gid) noexcept {
  if (gid == ::getegid()) return true;
  const int n = ::getgroups(0, nullptr);
  if (n <= 0) return false;
  std::vector<gid_t> groups(static_cast<std::size_t>(n));
  const int got = ::getgroups(n, groups.data());
  for (int i = 0; i < got; ++i) {
    if (groups[static_cast<std::size_t>(i)] == gid) return true;
  }
  return false;
}

}  // namespace

FileMeta FileMeta::from_stat(const struct stat& st) noexcept {
  FileMeta m;
  m.size = static_cast<std::uint64_t>(st.st_size);
  m.ino = st.st_ino;
  m.dev = st.st_dev;
  m.blocks = static_cast<std::uint64_t>(st.st_blocks);
  m.atime_ns = to_ns(st.st_atim);
  m.mtime_ns = to_ns(st.st_mtim);
  m.ctime_ns = to_ns(st.st_ctim);
  m.mode = st.st_mode;
  m.uid = st.st_uid;
  m.gid = st.st_gid;
  m.nlink = static_cast<std::uint32_t>(st.st_nlink);
  m.blksize = static_cast<std::uint32_t>(st.st_blksize);
  return m;
}

void FileMeta::to_stat(struct stat* st) const noexcept {
  std::memset(st, 0, sizeof *st);
  st->st_size = static_cast<off_t>(size);
  st->st_ino = ino;
  st->st_dev = dev;
  st->st_blocks = static_cast<blkcnt_t>(blocks);
  st->st_atim = from_ns(atime_ns);
  st->st_mtim = from_ns(mtime_ns);
  st->st_ctim = from_ns(ctime_ns);
  st->st_mode = mode;
  st->st_uid = uid;
  st->st_gid = gid;
  st->st_nlink = nlink;
  st->st_blksize = static_cast<blksize_t>(blksize);
}

bool FileMeta::readable_by_me() const noexcept {
  const uid_t euid = ::geteuid();
  if (euid == 0) return true;
  if (uid == euid) return (mode & S_IRUSR) != 0;
  if (in_my_groups(gid)) return (mode & S_IRGRP) != 0;
  return (mode & S_IROTH) != 0;
}

}  // namespace larder
