// validate_workload: one clear message per value larder-bench cannot run with.
#include <fmt/format.h>

#include "apps/larder-bench/config/workload.hpp"

namespace larder::bench {
namespace {

Status bad(std::string_view key, double value, std::string_view accepted) {
  return Status::error(fmt::format("{}: {} is not valid: accepted {}", key, value, accepted));
}

Status check_dataset(const DatasetConfig& d) {
  if (d.record_length <= 0) return bad("dataset.record_length_bytes", d.record_length, "> 0");
  if (d.record_length_stdev < 0) {
    return bad("dataset.record_length_bytes_stdev", d.record_length_stdev, ">= 0");
  }
  if (d.num_files_train < 0) return bad("dataset.num_files_train", d.num_files_train, ">= 0");
  if (d.num_files_eval < 0) return bad("dataset.num_files_eval", d.num_files_eval, ">= 0");
  if (d.num_samples_per_file < 1) {
    return bad("dataset.num_samples_per_file", d.num_samples_per_file, ">= 1");
  }
  if (d.num_subfolders_train < 0 || d.num_subfolders_eval < 0) {
    return Status::error("dataset.num_subfolders_train/_eval: accepted >= 0");
  }
  if (d.data_folder.empty()) return Status::error("dataset.data_folder: must not be empty");
  if (d.compression != "none" && d.compression != "gzip") {
    return Status::error(fmt::format(
        "dataset.compression: '{}' is not supported: accepted none, gzip (hdf5)", d.compression));
  }
  if (d.compression == "gzip" && d.format != Format::kHdf5) {
    return Status::error(
        "dataset.compression: gzip applies to hdf5 only (DLIO never "
        "compresses npz: its compression setting is compared as a string)");
  }
  if (d.num_dset_per_record < 0) {
    return bad("dataset.hdf5.num_dset_per_record", d.num_dset_per_record, ">= 0");
  }
  return {};
}

Status check_reader(const ReaderConfig& r) {
  if (r.batch_size < 1) return bad("reader.batch_size", r.batch_size, ">= 1");
  if (r.batch_size_eval < 1) return bad("reader.batch_size_eval", r.batch_size_eval, ">= 1");
  if (r.read_threads < 0 || r.read_threads > 1024) {
    return bad("reader.read_threads", r.read_threads, "0 to 1024");
  }
  if (r.prefetch_size < 0) return bad("reader.prefetch_size", r.prefetch_size, ">= 0");
  if (r.shuffle_size < 1) return bad("reader.shuffle_size", r.shuffle_size, ">= 1");
  if (r.transfer_size > (1ULL << 30)) {
    return bad("reader.transfer_size", static_cast<double>(r.transfer_size), "up to 1 GiB");
  }
  return {};
}

}  // namespace

std::string_view format_name(Format f) noexcept {
  switch (f) {
    case Format::kNpz:
      return "npz";
    case Format::kNpy:
      return "npy";
    case Format::kHdf5:
      return "hdf5";
    case Format::kTfrecord:
      return "tfrecord";
  }
  return "?";
}

Status validate_workload(const Workload& w) {
  if (Status s = check_dataset(w.dataset); !s.ok()) return s;
  if (Status s = check_reader(w.reader); !s.ok()) return s;
  if (w.train.epochs < 1) return bad("train.epochs", w.train.epochs, ">= 1");
  if (w.metric.au < 0 || w.metric.au > 1) return bad("metric.au", w.metric.au, "0 to 1");
  if (w.metric.exclude_start_steps < 0 || w.metric.exclude_end_steps < 0) {
    return Status::error("output.metric.exclude_start_steps/_end_steps: accepted >= 0");
  }
  if (w.evaluation.epochs_between_evals < 1) {
    return bad("evaluation.epochs_between_evals", w.evaluation.epochs_between_evals, ">= 1");
  }
  if (w.workflow.evaluation && w.dataset.num_files_eval < 1) {
    return Status::error("workflow.evaluation is True but dataset.num_files_eval is 0");
  }
  return {};
}

}  // namespace larder::bench
