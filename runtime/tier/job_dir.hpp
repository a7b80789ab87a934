// JobDir: the node-local files of one job, and the removal of crashed jobs' leftovers.
//
//   <shm_dir>/larder-<uid>/            0700, must be owned by us
//       <job>.lock                     every live process of the job holds a shared flock on it
//       <job>/arena-<rank>.mem         memory-tier arenas (0600)
//       <job>/workers-<rank>.stats     the counters of a rank's worker processes
//   <local_dir>/larder-<uid>/<job>/arena-<rank>.disk   disk-tier arenas
//
// A job whose lock file nobody holds, or whose directories have no lock file, is dead: the
// next job on the node removes its files (clean_stale_jobs). The lock is taken by open,
// flock(LOCK_SH), then a check that the path still names the locked inode, so a cleaner that
// removes a lock file between our open and flock cannot make us hold a lock on a ghost.
#ifndef LARDER_RUNTIME_TIER_JOB_DIR_HPP_
#define LARDER_RUNTIME_TIER_JOB_DIR_HPP_

#include <string>
#include <string_view>
#include <vector>

#include "runtime/common/status.hpp"
#include "runtime/common/unique_fd.hpp"
#include "runtime/tier/arena.hpp"

namespace larder {

class JobDir {
 public:
  // Joins (creating if needed) the job's directories and takes the shared job lock.
  // `with_disk` also creates the disk-tier directory under `local_dir`.
  static Result<JobDir> join(const std::string& shm_dir, const std::string& local_dir,
                             const std::string& job_id, bool with_disk);

  JobDir() = default;
  JobDir(const JobDir&) = delete;
  JobDir& operator=(const JobDir&) = delete;
  JobDir(JobDir&&) noexcept = default;
  JobDir& operator=(JobDir&&) noexcept = default;
  ~JobDir() = default;

  std::string arena_path(int rank, Tier tier) const;
  std::string worker_stats_path(int rank) const;
  const std::string& job_id() const noexcept { return job_id_; }
  const std::string& shm_job_dir() const noexcept { return shm_job_; }
  const std::string& disk_job_dir() const noexcept { return disk_job_; }  // empty: no disk tier
  const std::string& shm_base() const noexcept { return shm_base_; }
  const std::string& disk_base() const noexcept { return disk_base_; }

  // Removes every file of this job on this node (call once per node, after a barrier).
  void remove_all() const noexcept;

  // Removes the files of every other job of this user on this node that is no longer running.
  // Returns how many jobs were removed.
  static int clean_stale_jobs(const std::string& shm_dir, const std::string& local_dir,
                              const std::string& own_job_id) noexcept;

  // A fresh random job id (16 hex digits).
  static std::string new_job_id();

 private:
  std::string job_id_;
  std::string shm_base_;   // <shm_dir>/larder-<uid>
  std::string disk_base_;  // <local_dir>/larder-<uid>
  std::string shm_job_;    // <shm_base>/<job>
  std::string disk_job_;   // <disk_base>/<job> (empty without a disk tier)
  UniqueFd lock_;
};

// dir + "/" + name, built in place.
std::string child(std::string_view dir, std::string_view name);
// The names in a directory, without "." and ".." (empty when it cannot be read).
std::vector<std::string> list_dir(const std::string& path);

// Removes a directory tree (no symlinks followed). Best effort; logs failures.
void remove_tree(const std::string& path) noexcept;

}  // namespace larder

#endif  // LARDER_RUNTIME_TIER_JOB_DIR_HPP_
