#include "apps/larder-bench/data/file_names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace larder::bench {
namespace fs = std::filesystem;

namespace {

std::int64_t file_count(const DatasetConfig& d, Split split) {
  return split == Split::kTrain ? d.num_files_train : d.num_files_eval;
}
std::int64_t subfolder_count(const DatasetConfig& d, Split split) {
  return split == Split::kTrain ? d.num_subfolders_train : d.num_subfolders_eval;
}

std::string basename_of(const std::string& p) {
  const std::size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

bool has_suffix(const std::string& name, std::string_view suffix) {
  return name.size() >= suffix.size() &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Appends dir's regular-file entries ending in `suffix`; false (with `err`) when unreadable.
bool list_into(const std::string& dir, std::string_view suffix, std::vector<std::string>& out,
               std::error_code& err) {
  for (fs::directory_iterator it(dir, err), end; !err && it != end; it.increment(err)) {
    const std::string name = it->path().filename().string();
    if (has_suffix(name, suffix)) out.push_back(dir + "/" + name);
  }
  return !err;
}

}  // namespace

std::string zero_pad(std::int64_t n, std::size_t digits) {
  std::string s = std::to_string(n);
  if (s.size() < digits) s.insert(0, digits - s.size(), '0');
  return s;
}

std::string split_dir(const DatasetConfig& d, Split split) {
  return d.data_folder + (split == Split::kTrain ? "/train" : "/valid");
}

std::string dataset_file_path(const DatasetConfig& d, Split split, std::int64_t index) {
  const std::int64_t n = file_count(d, split);
  const std::int64_t sub = subfolder_count(d, split);
  const std::string name =
      fmt::format("{}_{}_of_{}.{}", d.file_prefix, zero_pad(index, std::to_string(n).size()), n,
                  format_name(d.format));
  if (sub > 1) {
    return fmt::format("{}/{}/{}", split_dir(d, split),
                       zero_pad(index % sub, std::to_string(sub).size()), name);
  }
  return split_dir(d, split) + "/" + name;
}

std::vector<std::string> planned_files(const DatasetConfig& d) {
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(d.num_files_train + d.num_files_eval));
  for (std::int64_t i = 0; i < d.num_files_train; ++i) {
    out.push_back(dataset_file_path(d, Split::kTrain, i));
  }
  for (std::int64_t i = 0; i < d.num_files_eval; ++i) {
    out.push_back(dataset_file_path(d, Split::kEval, i));
  }
  return out;
}

Result<std::vector<std::string>> list_dataset(const DatasetConfig& d, Split split) {
  const std::string dir = split_dir(d, split);
  const std::string suffix = std::string(format_name(d.format));
  const std::int64_t sub = subfolder_count(d, split);
  std::vector<std::string> files;
  std::error_code err;
  if (!fs::is_directory(dir, err)) {
    return Status::error(
        fmt::format("no {} files: {} is not a directory; run larder-bench generate "
                    "first",
                    split == Split::kTrain ? "training" : "evaluation", dir));
  }
  if (sub > 1) {
    for (std::int64_t i = 0; i < sub && !err; ++i) {
      list_into(dir + "/" + zero_pad(i, std::to_string(sub).size()), suffix, files, err);
    }
    std::sort(files.begin(), files.end(), [](const std::string& a, const std::string& b) {
      return basename_of(a) < basename_of(b);
    });
  } else {
    list_into(dir, suffix, files, err);
    std::sort(files.begin(), files.end());
  }
  if (err) return Status::error(fmt::format("cannot list {}: {}", dir, err.message()));
  const auto want = static_cast<std::size_t>(file_count(d, split));
  if (files.size() < want) {
    return Status::error(
        fmt::format("not enough {} files in {}: found {}, need {}; run larder-bench generate first",
                    split == Split::kTrain ? "training" : "evaluation", dir, files.size(), want));
  }
  files.resize(want);
  return files;
}

}  // namespace larder::bench
