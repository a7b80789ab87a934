#include "apps/larder-bench/config/yaml_fields.hpp"

namespace larder::bench {

YAML::Node YamlFields::lookup(const std::string& path) const {
  // Node assignment copies values in yaml-cpp; reset() rebinds the handle while walking.
  YAML::Node node;
  node.reset(root_);
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
    if (!node.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    const YAML::Node child = node[part];
    if (!child) return YAML::Node(YAML::NodeType::Undefined);
    node.reset(child);
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}

std::string YamlFields::text_of(const YAML::Node& node) {
  if (node.IsScalar()) return node.Scalar();
  YAML::Emitter out;
  out << YAML::Flow << node;
  return out.c_str();
}

bool YamlFields::known(const std::string& path) const {
  for (const std::string& r : read_) {
    if (path == r) return true;
    if (path.size() > r.size() && path.compare(0, r.size(), r) == 0 && path[r.size()] == '.') {
      return true;  // below a key read as a whole (a distribution map) or accepted
    }
  }
  return false;
}

void YamlFields::collect(const YAML::Node& node, const std::string& path,
                         std::vector<std::string>& out) const {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      const std::string key = kv.first.Scalar();
      collect(kv.second, path.empty() ? key : path + "." + key, out);
    }
    return;
  }
  if (!path.empty() && !known(path)) out.push_back(path);
}

std::vector<std::string> YamlFields::unread_keys() const {
  std::vector<std::string> out;
  collect(root_, "", out);
  return out;
}

}  // namespace larder::bench
