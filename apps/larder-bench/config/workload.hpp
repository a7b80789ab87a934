// Workload: a DLIO workload configuration, with DLIO's key names and defaults
// (dlio_benchmark/utils/config.py ConfigArguments and LoadConfig). docs/larder-bench.md lists
// every key larder-bench reads; keys DLIO reads but larder-bench does not emulate (checkpoint,
// profiling, storage) are accepted and reported as ignored.
#ifndef LARDER_APPS_LARDER_BENCH_CONFIG_WORKLOAD_HPP_
#define LARDER_APPS_LARDER_BENCH_CONFIG_WORKLOAD_HPP_

#include <cstdint>
#include <string>
#include <string_view>

#include "apps/larder-bench/config/time_spec.hpp"

namespace larder::bench {

enum class Format { kNpz, kNpy, kHdf5, kTfrecord };
enum class LoaderKind { kPytorch, kTensorflow };  // the sampler family: INDEX or ITERATIVE/TF
enum class Shuffle { kOff, kSeed, kRandom };
enum class ReadType { kOnDemand, kMemory };

std::string_view format_name(Format f) noexcept;

struct DatasetConfig {
  double record_length = 65536;  // record_length_bytes: nominal bytes, used by the metrics
  double record_length_stdev = 0;
  double record_length_resize = 0;
  std::int64_t num_files_train = 8;
  std::int64_t num_files_eval = 0;
  std::int64_t num_samples_per_file = 1;
  std::string data_folder = "./data";  // trailing '/' removed
  std::int64_t num_subfolders_train = 0;
  std::int64_t num_subfolders_eval = 0;
  std::string file_prefix = "img";
  Format format = Format::kTfrecord;
  std::string compression = "none";  // hdf5 only: none or gzip
  int compression_level = 4;
  bool enable_chunking = false;  // hdf5: chunks (1, c, c), c = min(ceil(sqrt(chunk_size)), dim)
  std::int64_t chunk_size = 0;
  int num_dset_per_record = 0;  // dataset.hdf5.num_dset_per_record: > 0 selects HEAD's records_k
};

struct ReaderConfig {
  LoaderKind data_loader = LoaderKind::kTensorflow;
  std::string data_loader_name = "tensorflow";
  std::int64_t batch_size = 1;
  std::int64_t batch_size_eval = 1;
  int read_threads = 1;
  int computation_threads = 1;
  int prefetch_size = 2;
  Shuffle file_shuffle = Shuffle::kOff;
  Shuffle sample_shuffle = Shuffle::kOff;
  std::int64_t shuffle_size = 1024;
  ReadType read_type = ReadType::kOnDemand;
  std::uint64_t transfer_size = 0;  // 0: 256 KiB, TensorFlow's and numpy's buffer
  bool odirect = false;
  TimeSpec preprocess_time;
  // Larder's extension: hand each epoch's sample order to Larder (larder_schedule) before the
  // epoch starts, and the next epoch's after it, so that the reads find their files ready.
  bool larder_prefetch = false;
};

struct TrainConfig {
  int epochs = 1;
  std::int64_t total_training_steps = -1;
  bool seed_change_epoch = true;
  std::uint32_t seed = 123;
  TimeSpec computation_time;
};

struct EvalConfig {
  TimeSpec eval_time;
  int eval_after_epoch = 1;
  int epochs_between_evals = 1;
};

struct WorkflowConfig {
  bool generate_data = false;
  bool train = true;
  bool evaluation = false;
  bool checkpoint = false;
  bool profiling = false;
};

struct MetricConfig {
  double au = 0.90;
  int exclude_start_steps = 1;
  int exclude_end_steps = 0;
};

struct Workload {
  std::string model = "default";
  std::string framework = "tensorflow";
  WorkflowConfig workflow;
  DatasetConfig dataset;
  ReaderConfig reader;
  TrainConfig train;
  EvalConfig evaluation;
  MetricConfig metric;

  std::uint64_t transfer_bytes() const noexcept {
    return reader.transfer_size > 0 ? reader.transfer_size : 256 * 1024;
  }
};

// One message for the first value larder-bench cannot run with (workload_check.cpp).
Status validate_workload(const Workload& w);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_CONFIG_WORKLOAD_HPP_
