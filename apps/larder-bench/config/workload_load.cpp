// load_workload: DLIO's LoadConfig, key by key, for the keys larder-bench emulates.
#include "apps/larder-bench/config/workload_load.hpp"

#include <fmt/format.h>

#include "apps/larder-bench/config/yaml_fields.hpp"

namespace larder::bench {
namespace {

template <class E>
struct Choice {
  const char* name;
  E value;
};

template <class E, std::size_t N>
Status read_choice(YamlFields& f, const std::string& key, const Choice<E> (&choices)[N], E& out,
                   std::string* name_out = nullptr) {
  std::string text;
  if (Status s = f.read(key, text); !s.ok() || text.empty()) return s;
  std::string accepted;
  for (const auto& c : choices) {
    if (text == c.name) {
      out = c.value;
      if (name_out != nullptr) *name_out = text;
      return {};
    }
    accepted += accepted.empty() ? c.name : std::string(", ") + c.name;
  }
  return Status::error(fmt::format("{}: '{}' is not valid: accepted {}", key, text, accepted));
}

constexpr Choice<Format> kFormats[] = {{"npz", Format::kNpz},
                                       {"npy", Format::kNpy},
                                       {"hdf5", Format::kHdf5},
                                       {"tfrecord", Format::kTfrecord}};
constexpr Choice<LoaderKind> kLoaders[] = {{"pytorch", LoaderKind::kPytorch},
                                           {"tensorflow", LoaderKind::kTensorflow},
                                           {"dali", LoaderKind::kPytorch},
                                           {"native_dali", LoaderKind::kPytorch}};
constexpr Choice<Shuffle> kShuffles[] = {
    {"off", Shuffle::kOff}, {"seed", Shuffle::kSeed}, {"random", Shuffle::kRandom}};
constexpr Choice<ReadType> kReadTypes[] = {{"on_demand", ReadType::kOnDemand},
                                           {"memory", ReadType::kMemory}};

Status read_time(YamlFields& f, const std::string& key, TimeSpec& out) {
  const YAML::Node node = f.find(key);
  if (node) {
    auto t = TimeSpec::parse(node, key);
    if (!t.ok()) return t.status();
    out = t.value();
  }
  double stdev = 0.0;
  if (Status s = f.read(key + "_stdev", stdev); !s.ok()) return s;
  if (stdev > 0.0) {
    out.kind = TimeSpec::Kind::kNormal;
    out.stdev = stdev;
  }
  return {};
}

Status load_dataset(YamlFields& f, DatasetConfig& d) {
  Status s;
  if (!(s = f.read("dataset.record_length_bytes", d.record_length)).ok() ||
      !(s = f.read("dataset.record_length_bytes_stdev", d.record_length_stdev)).ok() ||
      !(s = f.read("dataset.record_length_bytes_resize", d.record_length_resize)).ok() ||
      !(s = f.read("dataset.num_files_train", d.num_files_train)).ok() ||
      !(s = f.read("dataset.num_files_eval", d.num_files_eval)).ok() ||
      !(s = f.read("dataset.num_samples_per_file", d.num_samples_per_file)).ok() ||
      !(s = f.read("dataset.data_folder", d.data_folder)).ok() ||
      !(s = f.read("dataset.num_subfolders_train", d.num_subfolders_train)).ok() ||
      !(s = f.read("dataset.num_subfolders_eval", d.num_subfolders_eval)).ok() ||
      !(s = f.read("dataset.file_prefix", d.file_prefix)).ok() ||
      !(s = read_choice(f, "dataset.format", kFormats, d.format)).ok() ||
      !(s = f.read("dataset.compression", d.compression)).ok() ||
      !(s = f.read("dataset.compression_level", d.compression_level)).ok() ||
      !(s = f.read("dataset.enable_chunking", d.enable_chunking)).ok() ||
      !(s = f.read("dataset.chunk_size", d.chunk_size)).ok() ||
      !(s = f.read("dataset.hdf5.num_dset_per_record", d.num_dset_per_record)).ok()) {
    return s;
  }
  while (d.data_folder.size() > 1 && d.data_folder.back() == '/') d.data_folder.pop_back();
  for (const char* k : {"generation_buffer_size", "keep_files", "record_element_type",
                        "record_element_bytes", "record_dims", "data_gen_method", "hdf5"}) {
    f.accept_prefix(std::string("dataset.") + k);
  }
  return {};
}

Status load_reader(YamlFields& f, ReaderConfig& r) {
  const std::string p = f.has("data_reader") ? "data_reader." : "reader.";
  Status s;
  if (!(s = read_choice(f, p + "data_loader", kLoaders, r.data_loader, &r.data_loader_name)).ok() ||
      !(s = f.read(p + "batch_size", r.batch_size)).ok() ||
      !(s = f.read(p + "batch_size_eval", r.batch_size_eval)).ok() ||
      !(s = f.read(p + "read_threads", r.read_threads)).ok() ||
      !(s = f.read(p + "computation_threads", r.computation_threads)).ok() ||
      !(s = f.read(p + "prefetch_size", r.prefetch_size)).ok() ||
      !(s = read_choice(f, p + "file_shuffle", kShuffles, r.file_shuffle)).ok() ||
      !(s = read_choice(f, p + "sample_shuffle", kShuffles, r.sample_shuffle)).ok() ||
      !(s = f.read(p + "shuffle_size", r.shuffle_size)).ok() ||
      !(s = read_choice(f, p + "read_type", kReadTypes, r.read_type)).ok() ||
      !(s = f.read(p + "transfer_size", r.transfer_size)).ok() ||
      !(s = f.read(p + "odirect", r.odirect)).ok() ||
      !(s = read_time(f, p + "preprocess_time", r.preprocess_time)).ok() ||
      !(s = f.read(p + "larder_prefetch", r.larder_prefetch)).ok()) {
    return s;
  }
  // --prefetch sets reader.larder_prefetch, whichever name the workload gives its reader.
  if (p != "reader." && !(s = f.read("reader.larder_prefetch", r.larder_prefetch)).ok()) return s;
  for (const char* k :
       {"dont_use_mmap", "reader_classname", "multiprocessing_context", "data_loader_classname",
        "data_loader_sampler", "file_access", "pin_memory", "transformed_record_dims",
        "transformed_record_element_type", "storage_type", "protocol", "storage_library",
        "storage_root", "storage_options"}) {
    f.accept_prefix(p + k);
  }
  return {};
}

Status load_rest(YamlFields& f, Workload& w) {
  Status s;
  if (!(s = f.read("framework", w.framework)).ok() || !(s = f.read("model.name", w.model)).ok() ||
      !(s = f.read("workflow.generate_data", w.workflow.generate_data)).ok() ||
      !(s = f.read("workflow.train", w.workflow.train)).ok() ||
      !(s = f.read("workflow.evaluation", w.workflow.evaluation)).ok() ||
      !(s = f.read("workflow.checkpoint", w.workflow.checkpoint)).ok() ||
      !(s = f.read("workflow.profiling", w.workflow.profiling)).ok() ||
      !(s = f.read("train.epochs", w.train.epochs)).ok() ||
      !(s = f.read("train.total_training_steps", w.train.total_training_steps)).ok() ||
      !(s = f.read("train.seed_change_epoch", w.train.seed_change_epoch)).ok() ||
      !(s = f.read("train.seed", w.train.seed)).ok() ||
      !(s = read_time(f, "train.computation_time", w.train.computation_time)).ok() ||
      !(s = read_time(f, "evaluation.eval_time", w.evaluation.eval_time)).ok() ||
      !(s = f.read("evaluation.eval_after_epoch", w.evaluation.eval_after_epoch)).ok() ||
      !(s = f.read("evaluation.epochs_between_evals", w.evaluation.epochs_between_evals)).ok() ||
      !(s = f.read("metric.au", w.metric.au)).ok() ||
      !(s = f.read("output.metric.exclude_start_steps", w.metric.exclude_start_steps)).ok() ||
      !(s = f.read("output.metric.exclude_end_steps", w.metric.exclude_end_steps)).ok()) {
    return s;
  }
  for (const char* k : {"model", "checkpoint", "profiling", "storage", "storage_type",
                        "storage_root", "storage_options", "output", "hydra", "metric"}) {
    f.accept_prefix(k);
  }
  return {};
}

}  // namespace

Result<LoadedWorkload> load_workload(YAML::Node tree) {
  LoadedWorkload out;
  out.tree.reset(tree);
  YamlFields f(tree);
  Workload& w = out.workload;
  Status s;
  if (!(s = load_dataset(f, w.dataset)).ok() || !(s = load_reader(f, w.reader)).ok() ||
      !(s = load_rest(f, w)).ok() || !(s = validate_workload(w)).ok()) {
    return s;
  }
  for (const std::string& key : f.unread_keys()) {
    out.warnings.push_back(fmt::format("unknown key {} is ignored", key));
  }
  if (w.workflow.checkpoint) {
    out.warnings.emplace_back("workflow.checkpoint: checkpointing is not emulated; ignored");
  }
  if (w.workflow.profiling) {
    out.warnings.emplace_back("workflow.profiling: profilers are not run; ignored");
  }
  return out;
}

}  // namespace larder::bench
