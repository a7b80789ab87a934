// apply_override and load_workload_file (workload_load.hpp).
#include <fmt/format.h>

#include <string_view>

#include "apps/larder-bench/config/workload_load.hpp"

namespace larder::bench {
namespace {

// "++workload.a.b" / "+a.b" / "workload.a.b" -> "a.b"
std::string_view strip_hydra(std::string_view key) {
  while (!key.empty() && key.front() == '+') key.remove_prefix(1);
  constexpr std::string_view kWorkload = "workload.";
  if (key.substr(0, kWorkload.size()) == kWorkload) key.remove_prefix(kWorkload.size());
  return key;
}

// Sets node[parts[i]]...[parts.back()] = value; `node` shares identity with the caller's node.
void set_path(YAML::Node node, const std::vector<std::string>& parts, std::size_t i,
              const YAML::Node& value) {
  if (i + 1 == parts.size()) {
    node[parts[i]] = value;
    return;
  }
  if (!node[parts[i]] || !node[parts[i]].IsMap()) {
    node[parts[i]] = YAML::Node(YAML::NodeType::Map);
  }
  set_path(node[parts[i]], parts, i + 1, value);
}

}  // namespace

Status apply_override(YAML::Node& tree, const std::string& assignment) {
  const std::size_t eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::error(fmt::format(
        "--set '{}' is not valid: expected key=value, e.g. train.epochs=2", assignment));
  }
  const std::string_view key = strip_hydra(std::string_view(assignment).substr(0, eq));
  const std::string value_text = assignment.substr(eq + 1);
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= key.size()) {
    std::size_t dot = key.find('.', start);
    if (dot == std::string_view::npos) dot = key.size();
    if (dot == start) {
      return Status::error(fmt::format("--set '{}': empty key component", assignment));
    }
    parts.emplace_back(key.substr(start, dot - start));
    start = dot + 1;
  }
  YAML::Node value;
  try {
    value = value_text.empty() ? YAML::Node(YAML::NodeType::Null) : YAML::Load(value_text);
  } catch (const YAML::Exception& e) {
    return Status::error(fmt::format("--set '{}': value is not valid YAML: {}", assignment, e.msg));
  }
  if (!tree || !tree.IsMap()) tree = YAML::Node(YAML::NodeType::Map);
  set_path(tree, parts, 0, value);
  return {};
}

Result<LoadedWorkload> load_workload_file(const std::string& path,
                                          const std::vector<std::string>& overrides) {
  YAML::Node tree;
  try {
    tree = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    return Status::error(fmt::format("cannot read workload file {}", path));
  } catch (const YAML::Exception& e) {
    return Status::error(fmt::format("{}: line {}: {}", path, e.mark.line + 1, e.msg));
  }
  if (tree.IsMap() && tree["workload"] && tree["workload"].IsMap() && tree.size() == 1) {
    YAML::Node inner = tree["workload"];  // a Hydra dump (.hydra/config.yaml)
    tree.reset(inner);
  }
  for (const std::string& o : overrides) {
    if (Status s = apply_override(tree, o); !s.ok()) return s;
  }
  return load_workload(tree);
}

}  // namespace larder::bench
