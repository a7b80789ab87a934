#include "apps/larder-bench/data/generator.hpp"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <system_error>

#include "apps/larder-bench/data/file_names.hpp"
#include "apps/larder-bench/data/npz_writer.hpp"
#include "apps/larder-bench/data/output_file.hpp"
#include "apps/larder-bench/data/tfrecord_writer.hpp"
#if LARDER_BENCH_HAVE_HDF5
#include "apps/larder-bench/data/hdf5_writer.hpp"
#endif

namespace larder::bench {
namespace fs = std::filesystem;

namespace {

std::string parent_of(const std::string& path) {
  return fs::path(path).parent_path().string();
}

// {data_folder}/index/{train|valid}/{name}.idx next to a TFRecord file
std::string index_path(const DatasetConfig& d, const std::string& path) {
  const bool eval = path.find("/valid/") != std::string::npos;
  return fmt::format("{}/index/{}/{}.idx", d.data_folder, eval ? "valid" : "train",
                     fs::path(path).filename().string());
}

Status make_directories(const Workload& w) {
  std::vector<std::string> dirs = {split_dir(w.dataset, Split::kTrain),
                                   split_dir(w.dataset, Split::kEval)};
  for (const std::string& f : planned_files(w.dataset)) dirs.push_back(parent_of(f));
  if (w.dataset.format == Format::kTfrecord) {
    dirs.push_back(w.dataset.data_folder + "/index/train");
    dirs.push_back(w.dataset.data_folder + "/index/valid");
  }
  for (const std::string& d : dirs) {
    std::error_code err;
    fs::create_directories(d, err);
    if (err) return Status::error(fmt::format("cannot create {}: {}", d, err.message()));
  }
  return {};
}

Status write_tfrecord_file(const Workload& w, const GenerateOptions& o, const std::string& path,
                           Dims dims, std::uint64_t seed) {
  const std::int64_t size_value =
      o.layout == DlioLayout::kHead ? dims.bytes() : record_dimension(w.dataset.record_length);
  std::string index;
  Status s = write_tfrecord(path, dims, w.dataset.num_samples_per_file, size_value, seed, index);
  if (!s.ok()) return s;
  auto idx = OutputFile::create(index_path(w.dataset, path));
  if (!idx.ok()) return idx.status();
  if (s = idx->write(index); !s.ok()) return s;
  return idx->close();
}

#if LARDER_BENCH_HAVE_HDF5
Hdf5Layout hdf5_layout(const Workload& w, const GenerateOptions& o) {
  const DatasetConfig& d = w.dataset;
  Hdf5Layout l;
  if (o.layout == DlioLayout::kHead) {
    l.libver_latest = true;
    l.record_datasets.clear();
    for (int k = 0; k < std::max(d.num_dset_per_record, 1); ++k) {
      l.record_datasets.push_back(fmt::format("records_{}", k));
    }
  }
  if (d.enable_chunking || d.compression == "gzip") {
    const std::int64_t dim = record_dimension(d.record_length);
    const auto c = static_cast<std::int64_t>(std::ceil(std::sqrt(double(d.chunk_size))));
    l.chunk_dim = d.chunk_size > 0 ? std::min(c, dim) : dim;
  }
  if (d.compression == "gzip") l.gzip_level = d.compression_level;
  return l;
}
#endif

}  // namespace

Status write_sample_file(const Workload& w, const GenerateOptions& o, const std::string& path,
                         Dims dims, std::uint64_t seed) {
  const std::int64_t n = w.dataset.num_samples_per_file;
  switch (w.dataset.format) {
    case Format::kNpz:
      return write_npz(path, dims, n, seeded_content(seed), o.npz_style);
    case Format::kNpy:
      return write_npy(path, dims, n, seeded_content(seed));
    case Format::kTfrecord:
      return write_tfrecord_file(w, o, path, dims, seed);
    case Format::kHdf5:
#if LARDER_BENCH_HAVE_HDF5
      return write_hdf5(path, dims, n, hdf5_layout(w, o), seed);
#else
      return Status::error("this larder-bench was built without HDF5");
#endif
  }
  return Status::error("unknown format");
}

Status generate_dataset(const Workload& w, const GenerateOptions& o, const MpiWorld& world,
                        Console& console) {
  console.output("Starting data generation");
  Status local;
  if (world.root()) local = make_directories(w);
  if (!world.all_ok(local.ok())) {
    return local.ok() ? Status::error("rank 0 could not create the dataset directories") : local;
  }
  const std::vector<std::string> files = planned_files(w.dataset);
  const auto total = static_cast<std::int64_t>(files.size());
  const std::vector<Dims> dims = plan_dimensions(w.dataset, total);
  console.progress_start("generate", total);
  for (std::int64_t i = world.rank(); i < total && local.ok(); i += world.size()) {
    const auto k = static_cast<std::size_t>(i);
    local =
        write_sample_file(w, o, files[k], dims[k], 0x6c617264ULL + static_cast<std::uint64_t>(i));
    console.progress_update(i + 1, files[k]);
  }
  console.progress_end();
  if (!world.all_ok(local.ok())) {
    return local.ok() ? Status::error("generation failed on another rank") : local;
  }
  console.output(fmt::format("Generation done: {} files in {}", total, w.dataset.data_folder));
  return {};
}

}  // namespace larder::bench
