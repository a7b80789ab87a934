// Helpers for MPI tests: a data directory shared by the job's ranks (made by rank 0), Larder's
// environment, init/finalize, and the job's stats JSON.
#ifndef LARDER_TESTS_MPI_MPI_FIXTURE_HPP_
#define LARDER_TESTS_MPI_MPI_FIXTURE_HPP_

#include <gtest/gtest.h>
#include <larder/larder.h>
#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace larder::testing {

// The whole file read through Larder's C API in pieces of `piece` bytes (each read checked for
// its length).
std::vector<std::byte> read_in_pieces(const std::string& path, std::size_t piece);

// A counter of a stats JSON as a number, 0 when the stats lack it.
inline std::uint64_t u64(const nlohmann::json& j) {
  return j.is_number() ? j.get<std::uint64_t>() : 0;
}

class MpiFixture : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Sets LARDER_* for the next init (cleared at TearDown).
  void set_env(const std::string& name, const std::string& value);
  void init();                // collective
  nlohmann::json finalize();  // collective; the job's stats JSON, on every rank
  std::string data(const std::string& name) const { return data_dir_ + "/" + name; }
  // Rank 0 writes the file; everyone waits for it.
  void make_file(const std::string& name, std::uint64_t size, std::uint64_t seed);
  void barrier() { MPI_Barrier(MPI_COMM_WORLD); }

  std::uint64_t chunk_size = 64 << 10;

 private:
  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<TempDir> root_;  // rank 0 only
  std::string data_dir_;
  std::string stats_path_;
  std::vector<std::string> env_set_;
};

}  // namespace larder::testing

#endif  // LARDER_TESTS_MPI_MPI_FIXTURE_HPP_
