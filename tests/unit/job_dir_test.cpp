#include "runtime/tier/job_dir.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "tests/support/temp_dir.hpp"

namespace larder {
namespace {

bool exists(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

std::string base(const testing::TempDir& d) {
  return d.path() + "/larder-" + std::to_string(::geteuid());
}

TEST(JobDirTest, JoinCreatesPrivateDirectories) {
  testing::TempDir shm, local;
  auto job = JobDir::join(shm.path(), local.path(), "0123456789abcdef", true);
  ASSERT_TRUE(job.ok()) << job.status().to_string();
  struct stat st {};
  ASSERT_EQ(::stat(base(shm).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(exists(base(shm) + "/0123456789abcdef.lock"));
  EXPECT_TRUE(exists(base(local) + "/0123456789abcdef"));
  EXPECT_EQ(job->arena_path(3, Tier::kMem), base(shm) + "/0123456789abcdef/arena-3.mem");
  EXPECT_EQ(job->arena_path(3, Tier::kDisk), base(local) + "/0123456789abcdef/arena-3.disk");
  job->remove_all();
  EXPECT_FALSE(exists(base(shm) + "/0123456789abcdef"));
  EXPECT_FALSE(exists(base(shm) + "/0123456789abcdef.lock"));
  EXPECT_FALSE(exists(base(local) + "/0123456789abcdef"));
}

TEST(JobDirTest, RefusesABaseDirectoryOthersCanEnter) {
  testing::TempDir shm;
  ASSERT_EQ(::mkdir(base(shm).c_str(), 0755), 0);
  auto job = JobDir::join(shm.path(), shm.path(), "0123456789abcdef", false);
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("not a private directory"), std::string::npos);
}

TEST(JobDirTest, CleansJobsWhoseProcessesDied) {
  testing::TempDir shm, local;
  const std::string dead = "00000000000000aa";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto job = JobDir::join(shm.path(), local.path(), dead, true);
    if (!job.ok()) ::_exit(1);
    auto arena = Arena::create(job->arena_path(0, Tier::kMem), 4096);
    ::_exit(arena.ok() ? 0 : 2);  // "crash": no cleanup
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_TRUE(exists(base(shm) + "/" + dead + "/arena-0.mem"));

  auto live = JobDir::join(shm.path(), local.path(), "00000000000000bb", true);
  ASSERT_TRUE(live.ok());
  EXPECT_EQ(JobDir::clean_stale_jobs(shm.path(), local.path(), "00000000000000cc"), 1);
  EXPECT_FALSE(exists(base(shm) + "/" + dead));
  EXPECT_FALSE(exists(base(shm) + "/" + dead + ".lock"));
  EXPECT_FALSE(exists(base(local) + "/" + dead));
  // The live job (its lock is held by this process) is untouched.
  EXPECT_TRUE(exists(base(shm) + "/00000000000000bb"));
  EXPECT_TRUE(exists(base(local) + "/00000000000000bb"));
  live->remove_all();
}

TEST(JobDirTest, LeftoverDirectoryWithoutLockIsCleaned) {
  testing::TempDir shm, local;
  ASSERT_EQ(::mkdir(base(local).c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((base(local) + "/00000000000000dd").c_str(), 0700), 0);
  EXPECT_EQ(JobDir::clean_stale_jobs(shm.path(), local.path(), "00000000000000ee"), 1);
  EXPECT_FALSE(exists(base(local) + "/00000000000000dd"));
}

TEST(JobDirTest, JobIdsAreSixteenHexDigits) {
  const std::string a = JobDir::new_job_id();
  EXPECT_EQ(a.size(), 16u);
  EXPECT_NE(a, JobDir::new_job_id());
}

}  // namespace
}  // namespace larder
