// DLIO's dataset layout (data_generator.py, main.py initialize):
//   {data_folder}/train/{prefix}_{i}_of_{N}.{format}        i zero-padded to len(str(N))
//   {data_folder}/train/{i % S}/{prefix}_{i}_of_{N}.{format} with S = num_subfolders_train > 1
//   {data_folder}/valid/...                                   the same for evaluation files
// Training lists the directory, keeps names ending in the format, sorts them (by basename with
// subfolders) and uses the first num_files_* of them, as DLIO does.
#ifndef LARDER_APPS_LARDER_BENCH_DATA_FILE_NAMES_HPP_
#define LARDER_APPS_LARDER_BENCH_DATA_FILE_NAMES_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "apps/larder-bench/common/result.hpp"
#include "apps/larder-bench/config/workload.hpp"

namespace larder::bench {

enum class Split { kTrain, kEval };

// str(n).rjust(digits, '0')
std::string zero_pad(std::int64_t n, std::size_t digits);

std::string split_dir(const DatasetConfig& d, Split split);
std::string dataset_file_path(const DatasetConfig& d, Split split, std::int64_t index);

// Every file `generate` writes, in DLIO's order: training files, then evaluation files. File i
// of this list uses size draw i (size_plan.hpp).
std::vector<std::string> planned_files(const DatasetConfig& d);

// The files training reads: listed, filtered, sorted, truncated. An error when fewer than
// num_files_* exist ("run larder-bench generate first").
Result<std::vector<std::string>> list_dataset(const DatasetConfig& d, Split split);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_DATA_FILE_NAMES_HPP_
