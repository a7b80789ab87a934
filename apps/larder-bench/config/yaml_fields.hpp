// YamlFields: typed reads of dotted keys from a YAML tree, remembering which keys were read so
// that the keys nobody read can be reported ("unknown key dataset.num_file_train").
//
//   YamlFields f(root);
//   if (Status s = f.read("dataset.num_files_train", w.dataset.num_files_train); !s.ok()) ...
//   for (const std::string& k : f.unread_keys()) warn(k);
// A missing key leaves the target unchanged (the default). A value of the wrong type is an error
// naming the key and the value. Not thread-safe.
#ifndef LARDER_APPS_LARDER_BENCH_CONFIG_YAML_FIELDS_HPP_
#define LARDER_APPS_LARDER_BENCH_CONFIG_YAML_FIELDS_HPP_

#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "apps/larder-bench/common/result.hpp"

namespace larder::bench {

class YamlFields {
 public:
  explicit YamlFields(YAML::Node root) : root_(std::move(root)) {}

  // The node at `path` ("a.b.c"), or an undefined node; marks the path as read.
  YAML::Node find(const std::string& path) {
    read_.insert(path);
    return lookup(path);
  }
  // True when `path` is present; does not mark it as read.
  bool has(const std::string& path) const { return static_cast<bool>(lookup(path)); }

  template <class T>
  Status read(const std::string& path, T& out) {
    const YAML::Node node = find(path);
    if (!node || node.IsNull()) return {};
    try {
      out = node.as<T>();
      return {};
    } catch (const YAML::Exception&) {
      return Status::error(fmt::format("{}: '{}' is not a valid value", path, text_of(node)));
    }
  }

  // Marks everything below `prefix` as known (keys DLIO reads that larder-bench ignores).
  void accept_prefix(const std::string& prefix) { read_.insert(prefix); }
  // Leaf keys present in the tree that were neither read nor below an accepted prefix.
  std::vector<std::string> unread_keys() const;

 private:
  YAML::Node lookup(const std::string& path) const;
  static std::string text_of(const YAML::Node& node);
  void collect(const YAML::Node& node, const std::string& path,
               std::vector<std::string>& out) const;
  bool known(const std::string& path) const;

  YAML::Node root_;
  std::set<std::string> read_;
};

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_CONFIG_YAML_FIELDS_HPP_
