// larder-scale-probe: the scale model's placement and tree shapes, from the runtime's own code.
//
// The scale model (larder_scale_model.py, docs/scale.md) projects the read protocol at 64-8192
// nodes. What in it is a property of the code rather than of costs is computed here, by the
// functions the cache itself calls, for the model's workloads' actual key names:
//
//   * the node group size G and the trees' fan-out: Config::parse (LARDER_FANOUT, LARDER_GROUP)
//     and Config::group_size; the tree fan-out is the rule of Cache's constructor (LARDER_FANOUT,
//     or max(1, LARDER_FANOUT / 2) with groups);
//   * where every key lives: path_key, chunk_key, file_id_of (runtime/chunk/chunk_key.hpp), home
//     rank = key.home % ranks (the directory's rule), and for a key's group entry the rank of
//     Cache::group_entry: the group's ranks, in rank order, indexed by key.check % their count;
//   * the fan-out trees' shapes: fanout::position, parent, ancestors, can_have_children, depth
//     (runtime/cache/fanout.hpp) over every position of the tree a chunk builds: one per node
//     without groups; with groups, one of the groups' representatives and one per group.
//
//   larder-scale-probe --nodes 64,128,... [--ranks-per-node 12] [--fanout 8] [--group auto,off]
//                      [--keys FILE]
//
// FILE has one key a line: STEP <tab> KIND <tab> PATH [<tab> CHUNK INDEX], KIND one of path,
// listing, chunk; keys of one STEP are looked up together. Prints JSON on stdout: for each node
// count and group setting, G and the trees' shapes, and for each step the home rank of each key
// and its slot among its group's ranks (full groups, and the last one when it is smaller), with
// the most keys of the step on one rank. Ranks are placed in blocks (rank r on node r / R), as the
// model assumes. Exit status 2 on a bad argument or key file.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/cache/fanout.hpp"
#include "runtime/chunk/chunk_key.hpp"
#include "runtime/config/config.hpp"

namespace {

using nlohmann::json;

struct Args {
  std::vector<std::uint64_t> nodes;
  std::uint32_t ranks_per_node = 12;
  std::string fanout = "8";
  std::vector<std::string> groups = {"auto"};
  std::string keys_path;
};

struct KeyLine {
  std::string step;
  larder::Key key;
};

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "larder-scale-probe: " << why
            << "\nusage: larder-scale-probe --nodes N[,N...] [--ranks-per-node R] [--fanout F]"
               " [--group auto|off|G[,...]] [--keys FILE]\n";
  std::exit(2);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

std::uint64_t to_u64(const std::string& s, const char* what) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || end == nullptr || *end != '\0') usage(std::string("bad ") + what + ": " + s);
  return v;
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string opt = argv[i];
    if (i + 1 >= argc) usage("missing value after " + opt);
    const std::string v = argv[++i];
    if (opt == "--nodes") {
      for (const std::string& n : split(v, ',')) a.nodes.push_back(to_u64(n, "node count"));
    } else if (opt == "--ranks-per-node") {
      a.ranks_per_node = static_cast<std::uint32_t>(to_u64(v, "ranks per node"));
    } else if (opt == "--fanout") {
      a.fanout = v;
    } else if (opt == "--group") {
      a.groups = split(v, ',');
    } else if (opt == "--keys") {
      a.keys_path = v;
    } else {
      usage("unknown option " + opt);
    }
  }
  if (a.nodes.empty()) usage("--nodes is required");
  if (a.ranks_per_node == 0) usage("--ranks-per-node must be at least 1");
  for (std::uint64_t n : a.nodes) {
    if (n == 0) usage("a node count must be at least 1");
  }
  return a;
}

// The settings of a job, read by the runtime's own parser from the variables a user would set.
larder::Config config_for(const std::string& fanout, const std::string& group) {
  const std::map<std::string, std::string> env = {{"LARDER_FANOUT", fanout},
                                                  {"LARDER_GROUP", group}};
  auto c = larder::Config::parse([&](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
  if (!c.ok()) usage(c.status().to_string());
  return *c;
}

std::vector<KeyLine> read_keys(const std::string& path) {
  std::vector<KeyLine> out;
  if (path.empty()) return out;
  std::ifstream in(path);
  if (!in) usage("cannot read " + path);
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    const std::vector<std::string> f = split(line, '\t');
    const std::string where = path + ":" + std::to_string(number);
    if (f.size() < 3) usage(where + ": want STEP, KIND, PATH [, CHUNK INDEX]");
    KeyLine k{f[0], {}};
    if (f[1] == "path") {
      k.key = larder::path_key(larder::KeyKind::kPath, f[2]);
    } else if (f[1] == "listing") {
      k.key = larder::path_key(larder::KeyKind::kListing, f[2]);
    } else if (f[1] == "chunk") {
      if (f.size() < 4) usage(where + ": a chunk needs its index");
      k.key = larder::chunk_key(larder::file_id_of(f[2]), to_u64(f[3], "chunk index"));
    } else {
      usage(where + ": unknown kind " + f[1]);
    }
    out.push_back(std::move(k));
  }
  return out;
}

// The shape of the fan-out tree of a chunk read by `positions` places (nodes, or groups), with
// the runtime's functions: every position's parent and depth, the positions that hold an entry
// (can have children) and those that ask their parent's entry (the parent is not the origin).
json tree_shape(std::uint64_t positions, std::uint32_t fanout) {
  std::vector<std::uint64_t> children(positions, 0);
  std::uint64_t holders = 0;
  std::uint64_t askers = 0;
  std::uint32_t deepest = 0;
  std::uint64_t chain = 0;
  for (std::uint64_t p = 1; p < positions; ++p) {
    const std::uint64_t parent = larder::fanout::parent(p, fanout);
    ++children[parent];
    if (larder::fanout::can_have_children(p, fanout, positions)) ++holders;
    if (parent != 0 && larder::fanout::can_have_children(parent, fanout, positions)) ++askers;
    deepest = std::max(deepest, larder::fanout::depth(p, fanout));
  }
  if (positions > 1) chain = larder::fanout::ancestors(positions - 1, fanout).size();
  // Tickets become positions: the origin's ticket is 0 wherever it falls among the tickets.
  const std::uint64_t origin_ticket = positions / 2;
  bool positions_ok = true;
  for (std::uint64_t t = 0; t < positions; ++t) {
    const std::uint64_t p = larder::fanout::position(t, origin_ticket);
    if (p >= positions || (t == origin_ticket) != (p == 0)) positions_ok = false;
  }
  const std::uint64_t most =
      children.empty() ? 0 : *std::max_element(children.begin(), children.end());
  return {{"positions", positions},
          {"fanout", fanout},
          {"depth_last", positions > 1 ? larder::fanout::depth(positions - 1, fanout) : 0},
          {"depth_max", deepest},
          {"ancestors_last", chain},
          {"max_children", most},
          {"root_children", children.empty() ? 0 : children[0]},
          {"holders", holders},
          {"askers", askers},
          {"tickets_map_to_positions", positions_ok}};
}

json job(const Args& a, std::uint64_t nodes, const std::string& group_setting,
         const std::vector<KeyLine>& keys) {
  const larder::Config config = config_for(a.fanout, group_setting);
  const std::uint64_t g = config.group_size(nodes);
  // Cache's constructor: with groups every tree's fan-out is half of LARDER_FANOUT (at least 1).
  const std::uint32_t tree_fanout = g > 0 ? std::max(1u, config.fanout / 2) : config.fanout;
  const std::uint64_t r = a.ranks_per_node;
  const std::uint64_t ranks = nodes * r;
  const std::uint64_t groups = g > 0 ? (nodes + g - 1) / g : 0;
  const std::uint64_t last_nodes = g > 0 ? nodes - (groups - 1) * g : 0;
  json out = {{"nodes", nodes},
              {"group_setting", group_setting},
              {"ranks", ranks},
              {"fanout", config.fanout},
              {"group_size", g},
              {"groups", groups},
              {"last_group_nodes", last_nodes},
              {"tree_fanout", tree_fanout}};
  if (g == 0) {
    out["trees"] = {{"nodes", tree_shape(nodes, tree_fanout)}};
    out["max_node_children"] = out["trees"]["nodes"]["max_children"];
  } else {
    const json reps = tree_shape(groups, tree_fanout);
    const json full = tree_shape(g, tree_fanout);
    const json last = tree_shape(last_nodes, tree_fanout);
    out["trees"] = {{"representatives", reps}, {"group", full}, {"last_group", last}};
    // A representative is a place in the representatives' tree and the root of its group's.
    const std::uint64_t root = std::max(full["root_children"].get<std::uint64_t>(),
                                        last["root_children"].get<std::uint64_t>());
    out["max_node_children"] = std::max({reps["max_children"].get<std::uint64_t>() + root,
                                         full["max_children"].get<std::uint64_t>(),
                                         last["max_children"].get<std::uint64_t>()});
  }
  if (keys.empty()) return out;

  // Where each key lives: its home rank, and its group entry's rank within each group.
  const std::uint64_t full_ranks = g * r;
  const std::uint64_t last_ranks = last_nodes * r;
  std::vector<std::uint64_t> at_home(ranks, 0);
  std::vector<std::uint64_t> at_full_slot(full_ranks, 0);
  std::vector<std::uint64_t> at_last_slot(last_ranks, 0);
  json steps = json::object();
  std::vector<std::string> order;
  std::unordered_map<std::string, json> by_step;
  for (const KeyLine& k : keys) {
    auto [it, fresh] = by_step.try_emplace(k.step, json::object());
    if (fresh) {
      order.push_back(k.step);
      it->second = {{"homes", json::array()}};
      if (g > 0) {
        it->second["group_slots"] = json::array();
        it->second["last_group_slots"] = json::array();
      }
    }
    const std::uint64_t home = k.key.home % ranks;
    ++at_home[home];
    it->second["homes"].push_back(home);
    if (g > 0) {
      const std::uint64_t slot = k.key.check % full_ranks;
      const std::uint64_t last_slot = k.key.check % last_ranks;
      ++at_full_slot[slot];
      ++at_last_slot[last_slot];
      it->second["group_slots"].push_back(slot);
      it->second["last_group_slots"].push_back(last_slot);
    }
  }
  auto most_on_one = [](const json& ids) {
    std::unordered_map<std::uint64_t, std::uint64_t> count;
    std::uint64_t most = 0;
    for (const json& id : ids) most = std::max(most, ++count[id.get<std::uint64_t>()]);
    return most;
  };
  for (const std::string& name : order) {
    json& s = by_step[name];
    s["max_home"] = most_on_one(s["homes"]);
    if (g > 0) {
      s["max_group_home"] =
          std::max(most_on_one(s["group_slots"]), most_on_one(s["last_group_slots"]));
    }
    steps[name] = std::move(s);
  }
  out["steps"] = std::move(steps);
  // The busiest ranks: by keys homed there, by group entries, and by both.
  const auto busiest_home = std::max_element(at_home.begin(), at_home.end());
  out["busiest_home"] = {{"rank", busiest_home - at_home.begin()}, {"keys", *busiest_home}};
  std::uint64_t both = 0;
  std::uint64_t both_rank = 0;
  std::uint64_t entries = 0;
  for (std::uint64_t rank = 0; rank < ranks; ++rank) {
    std::uint64_t e = 0;
    if (g > 0) {
      const std::uint64_t group = rank / r / g;
      const std::uint64_t slot = rank - group * g * r;
      e = group + 1 < groups ? at_full_slot[slot] : at_last_slot[slot];
    }
    entries = std::max(entries, e);
    if (at_home[rank] + e > both) {
      both = at_home[rank] + e;
      both_rank = rank;
    }
  }
  out["busiest_group_home"] = {{"entries", entries}};
  out["busiest_rank"] = {{"rank", both_rank}, {"keys_and_group_entries", both}};
  out["keys"] = keys.size();
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse_args(argc, argv);
  const std::vector<KeyLine> keys = read_keys(a.keys_path);
  json jobs = json::array();
  for (std::uint64_t n : a.nodes) {
    for (const std::string& setting : a.groups) jobs.push_back(job(a, n, setting, keys));
  }
  const json out = {{"probe", "larder-scale-probe"},
                    {"ranks_per_node", a.ranks_per_node},
                    {"fanout", a.fanout},
                    {"jobs", std::move(jobs)}};
  std::cout << out.dump() << "\n";
  return 0;
}
