#include "runtime/tier/job_dir.hpp"

#include <dirent.h>
#include <sys/file.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <string_view>
#include <vector>

#include "runtime/common/log.hpp"
#include "runtime/common/sys.hpp"

namespace larder {
namespace {

std::string user_base(const std::string& dir) {
  return dir + "/larder-" + std::to_string(::geteuid());
}

// Creates `path` as a 0700 directory owned by us, or checks that the existing one is.
Status ensure_private_dir(const std::string& path) {
  if (sys::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return from_errno(errno, "cannot create directory " + path);
  }
  struct stat st {};
  if (sys::lstat(path.c_str(), &st) != 0) return from_errno(errno, "cannot stat " + path);
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return {Errc::kInvalidArgument, EPERM,
            path + " exists but is not a private directory of this user; remove it"};
  }
  return {};
}

Status ensure_dir(const std::string& path) {
  if (sys::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    return from_errno(errno, "cannot create directory " + path);
  }
  return {};
}

// open + flock + verify that the path still names the locked file.
Result<UniqueFd> lock_shared(const std::string& path) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    UniqueFd fd(sys::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd.valid()) return from_errno(errno, "cannot create job lock " + path);
    if (sys::flock(fd.get(), LOCK_SH) != 0) return from_errno(errno, "cannot lock " + path);
    struct stat held {
    }, named{};
    if (sys::fstat(fd.get(), &held) != 0) return from_errno(errno, "cannot stat " + path);
    if (sys::stat(path.c_str(), &named) == 0 && named.st_ino == held.st_ino &&
        named.st_dev == held.st_dev) {
      return fd;
    }
    // A cleaner removed the file between our open and flock: try again with a new one.
  }
  return Status(Errc::kInternal, EAGAIN, "could not take job lock " + path);
}

bool is_job_id(std::string_view name) {
  if (name.size() != 16) return false;
  for (char c : name) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

// dir + "/" + name, built in place.
std::string child(std::string_view dir, std::string_view name) {
  std::string path;
  path.reserve(dir.size() + 1 + name.size());
  path.append(dir).append(1, '/').append(name);
  return path;
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> names;
  DIR* dir = ::opendir(path.c_str());
  if (dir == nullptr) return names;
  while (dirent* e = ::readdir(dir)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      names.emplace_back(e->d_name);
  }
  ::closedir(dir);
  return names;
}

void remove_tree(const std::string& path) noexcept {
  try {
    struct stat st {};
    if (sys::lstat(path.c_str(), &st) != 0) return;
    if (S_ISDIR(st.st_mode)) {
      for (const std::string& name : list_dir(path)) remove_tree(child(path, name));
      if (sys::rmdir(path.c_str()) != 0 && errno != ENOENT) {
        LARDER_LOG_WARN("cannot remove directory {}: {}", path, log::errno_text(errno));
      }
    } else if (sys::unlink(path.c_str()) != 0 && errno != ENOENT) {
      LARDER_LOG_WARN("cannot remove {}: {}", path, log::errno_text(errno));
    }
  } catch (...) {
    LARDER_LOG_WARN("cannot remove {}: out of memory", path);
  }
}

std::string JobDir::new_job_id() {
  std::uint64_t v = 0;
  if (::getrandom(&v, sizeof v, 0) != static_cast<ssize_t>(sizeof v)) {
    v = static_cast<std::uint64_t>(::getpid()) * 0x9E3779B97F4A7C15ull ^
        static_cast<std::uint64_t>(::time(nullptr));
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

Result<JobDir> JobDir::join(const std::string& shm_dir, const std::string& local_dir,
                            const std::string& job_id, bool with_disk) {
  JobDir d;
  d.job_id_ = job_id;
  d.shm_base_ = user_base(shm_dir);
  if (Status s = ensure_private_dir(d.shm_base_); !s.ok()) return s;
  auto lock = lock_shared(d.shm_base_ + "/" + job_id + ".lock");
  if (!lock.ok()) return lock.status();
  d.lock_ = std::move(*lock);
  d.shm_job_ = d.shm_base_ + "/" + job_id;
  if (Status s = ensure_dir(d.shm_job_); !s.ok()) return s;
  if (with_disk) {
    d.disk_base_ = user_base(local_dir);
    if (Status s = ensure_private_dir(d.disk_base_); !s.ok()) return s;
    d.disk_job_ = d.disk_base_ + "/" + job_id;
    if (Status s = ensure_dir(d.disk_job_); !s.ok()) return s;
  }
  return d;
}

std::string JobDir::arena_path(int rank, Tier tier) const {
  if (tier == Tier::kDisk) return disk_job_ + "/arena-" + std::to_string(rank) + ".disk";
  return shm_job_ + "/arena-" + std::to_string(rank) + ".mem";
}

std::string JobDir::worker_stats_path(int rank) const {
  return shm_job_ + "/workers-" + std::to_string(rank) + ".stats";
}

void JobDir::remove_all() const noexcept {
  if (!shm_job_.empty()) remove_tree(shm_job_);
  if (!disk_job_.empty()) remove_tree(disk_job_);
  if (!shm_base_.empty()) {
    const std::string lock = shm_base_ + "/" + job_id_ + ".lock";
    sys::unlink(lock.c_str());
  }
}

int JobDir::clean_stale_jobs(const std::string& shm_dir, const std::string& local_dir,
                             const std::string& own_job_id) noexcept {
  int removed = 0;
  try {
    const std::string shm_base = user_base(shm_dir);
    const std::string disk_base = user_base(local_dir);
    std::vector<std::string> jobs;
    for (const std::string& name : list_dir(shm_base)) {
      std::string job = name;
      if (job.size() > 5 && job.ends_with(".lock")) job.resize(job.size() - 5);
      if (is_job_id(job) && job != own_job_id) jobs.push_back(job);
    }
    for (const std::string& name : list_dir(disk_base)) {
      if (is_job_id(name) && name != own_job_id) jobs.push_back(name);
    }
    std::sort(jobs.begin(), jobs.end());
    jobs.erase(std::unique(jobs.begin(), jobs.end()), jobs.end());
    for (const std::string& job : jobs) {
      const std::string lock = child(shm_base, job) + ".lock";
      UniqueFd fd(sys::open(lock.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
      if (fd.valid() && sys::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // alive
      if (!fd.valid() && errno != ENOENT) continue;
      remove_tree(child(shm_base, job));
      remove_tree(child(disk_base, job));
      sys::unlink(lock.c_str());
      ++removed;
      LARDER_LOG_INFO("removed the node-local files of ended job {}", job);
    }
  } catch (...) {
    LARDER_LOG_WARN("cleaning ended jobs' files failed: out of memory");
  }
  return removed;
}

}  // namespace larder
