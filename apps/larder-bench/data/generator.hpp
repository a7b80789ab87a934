// generate: writes a workload's dataset as DLIO does, in parallel: rank r writes files
// r, r + P, r + 2P ... of the generation list (training files, then evaluation files), with the
// seeded sizes of size_plan.hpp and the formats' writers. Rank 0 creates the directories first.
// Collective. Existing files are overwritten.
#ifndef LARDER_APPS_LARDER_BENCH_DATA_GENERATOR_HPP_
#define LARDER_APPS_LARDER_BENCH_DATA_GENERATOR_HPP_

#include <cstdint>
#include <string>

#include "apps/larder-bench/common/mpi_world.hpp"
#include "apps/larder-bench/common/result.hpp"
#include "apps/larder-bench/config/workload.hpp"
#include "apps/larder-bench/data/size_plan.hpp"
#include "apps/larder-bench/data/zip_stored.hpp"
#include "apps/larder-bench/output/console.hpp"

namespace larder::bench {

// Which DLIO generation the files follow where DLIO versions differ:
//   kMlperfV2  mlperf_storage v2.0 branch (what MLPerf Storage v2.0 runs): hdf5 'records',
//              TFRecord 'size' = nominal dimension
//   kHead      DLIO main: hdf5 libver latest and 'records_0'..; TFRecord 'size' = d1*d2
enum class DlioLayout { kMlperfV2, kHead };

struct GenerateOptions {
  ZipStyle npz_style = ZipStyle::kModern;
  DlioLayout layout = DlioLayout::kMlperfV2;
};

// Writes one file of the plan (no MPI). `seed` selects the content.
Status write_sample_file(const Workload& w, const GenerateOptions& o, const std::string& path,
                         Dims dims, std::uint64_t seed);

Status generate_dataset(const Workload& w, const GenerateOptions& o, const MpiWorld& world,
                        Console& console);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_DATA_GENERATOR_HPP_
