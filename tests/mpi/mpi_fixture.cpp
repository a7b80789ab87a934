#include "tests/mpi/mpi_fixture.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include <cstdlib>
#include <fstream>

#include "runtime/path/path.hpp"
#include "tests/support/data_files.hpp"

namespace larder::testing {

std::vector<std::byte> read_in_pieces(const std::string& path, std::size_t piece) {
  const int fd = larder_open(path.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0) << path;
  if (fd < 0) return {};
  struct stat st {};
  EXPECT_EQ(larder_fstat(fd, &st), 0);
  std::vector<std::byte> out(static_cast<std::size_t>(st.st_size));
  for (std::size_t off = 0; off < out.size(); off += piece) {
    const std::size_t n = std::min(piece, out.size() - off);
    EXPECT_EQ(larder_pread(fd, out.data() + off, n, static_cast<off_t>(off)),
              static_cast<ssize_t>(n));
  }
  larder_close(fd);
  return out;
}

void MpiFixture::SetUp() {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  char buf[4096] = {};
  if (rank_ == 0) {
    root_ = std::make_unique<TempDir>("larder-mpi");
    std::snprintf(buf, sizeof buf, "%s", path::real_path_or_empty(root_->path()).c_str());
  }
  MPI_Bcast(buf, sizeof buf, MPI_CHAR, 0, MPI_COMM_WORLD);
  const std::string root = buf;
  data_dir_ = root + "/data";
  stats_path_ = root + "/stats.json";
  if (rank_ == 0) ::mkdir(data_dir_.c_str(), 0755);
  set_env("LARDER_PREFIX", data_dir_);
  set_env("LARDER_LOCAL_FS", "cache");  // the local data directory stands in for the PFS
  set_env("LARDER_CHUNK", std::to_string(chunk_size));
  set_env("LARDER_MEM", "256M");
  set_env("LARDER_STATS", stats_path_);
  set_env("LARDER_LOG", "error");
  // Answers are checked again after LARDER_REVALIDATE (60 s by default): a test slowed past that
  // (TSan: 65 s for one test) would count those checks as PFS operations. Tests of revalidation
  // set their own period.
  set_env("LARDER_REVALIDATE", "off");
  barrier();
}

void MpiFixture::TearDown() {
  if (larder_initialized()) finalize();
  for (const std::string& name : env_set_) ::unsetenv(name.c_str());
  env_set_.clear();
  barrier();
  root_.reset();
}

void MpiFixture::set_env(const std::string& name, const std::string& value) {
  ::setenv(name.c_str(), value.c_str(), 1);
  env_set_.push_back(name);
}

void MpiFixture::init() {
  ::setenv("LARDER_CHUNK", std::to_string(chunk_size).c_str(), 1);
  ASSERT_EQ(larder_init(MPI_COMM_WORLD), LARDER_OK) << larder_last_error();
}

nlohmann::json MpiFixture::finalize() {
  EXPECT_EQ(larder_finalize(), LARDER_OK) << larder_last_error();
  barrier();
  std::ifstream in(stats_path_);
  if (!in.good()) {
    ADD_FAILURE() << "no stats file at " << stats_path_;
    return {};
  }
  return nlohmann::json::parse(in);
}

void MpiFixture::make_file(const std::string& name, std::uint64_t size, std::uint64_t seed) {
  if (rank_ == 0) write_data_file(data(name), size, seed);
  barrier();
}

}  // namespace larder::testing
