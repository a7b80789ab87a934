#include "runtime/config/config.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <string_view>

#include "runtime/common/units.hpp"
#include "runtime/path/path.hpp"
#include "runtime/pfs/node_local.hpp"

namespace larder {
namespace {

Status bad(std::string_view var, std::string_view value, std::string_view accepted) {
  return invalid_argument(std::string(var) + "='" + std::string(value) +
                          "' is not valid: accepted " + std::string(accepted));
}

std::optional<bool> parse_bool(std::string_view v) {
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  return std::nullopt;
}

template <class T>
std::optional<T> parse_int(std::string_view v) {
  T out{};
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || ptr != v.data() + v.size()) return std::nullopt;
  return out;
}

// Adds the directories of `value` (variable `var`) to `out`, and to the managed prefixes.
Status parse_prefixes(const char* var, std::string_view value, Config& config,
                      std::vector<std::string>* out) {
  constexpr std::string_view kAccepted =
      "a colon-separated list of absolute directory paths, e.g. /lus/data:/lus/envs";
  std::size_t start = 0;
  while (start <= value.size()) {
    std::size_t end = value.find(':', start);
    if (end == std::string_view::npos) end = value.size();
    std::string_view item = value.substr(start, end - start);
    if (!item.empty()) {
      if (item.front() != '/') return bad(var, value, kAccepted);
      std::string clean = path::lexically_normal(std::string(item));
      // A prefix given through a symlink also matches under its real name.
      std::string real = path::real_path_or_empty(clean);
      for (std::vector<std::string>* list : {&config.prefixes, out}) {
        if (list == nullptr) continue;
        list->push_back(clean);
        if (!real.empty() && real != clean) list->push_back(real);
      }
    }
    start = end + 1;
  }
  return {};
}

}  // namespace

std::uint64_t default_mem_budget() noexcept {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 1ull << 30;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 4;
}

Result<Config> Config::parse(const Lookup& lookup) {
  Config c;
  c.mem_budget = default_mem_budget();
  auto get = [&](const char* name) -> std::optional<std::string_view> {
    const char* v = lookup(name);
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string_view(v);
  };
  if (auto v = get("LARDER_ENABLE")) {
    auto b = parse_bool(*v);
    if (!b) return bad("LARDER_ENABLE", *v, "1, 0, true, false, yes, no, on or off");
    c.enabled = *b;
  }
  if (auto v = get("LARDER_PREFIX")) {
    if (Status s = parse_prefixes("LARDER_PREFIX", *v, c, nullptr); !s.ok()) return s;
  }
  if (auto v = get("LARDER_PRODUCE")) {
    if (Status s = parse_prefixes("LARDER_PRODUCE", *v, c, &c.produce); !s.ok()) return s;
  }
  if (auto v = get("LARDER_LOCAL_FS")) {
    if (*v == "bypass") {
      c.local_fs = LocalFs::kBypass;
    } else if (*v == "cache") {
      c.local_fs = LocalFs::kCache;
    } else {
      return bad("LARDER_LOCAL_FS", *v, "bypass or cache");
    }
  }
  if (auto v = get("LARDER_PRODUCE_MODE")) {
    if (*v == "through") {
      c.produce_mode = ProduceMode::kThrough;
    } else if (*v == "local") {
      c.produce_mode = ProduceMode::kLocal;
    } else {
      return bad("LARDER_PRODUCE_MODE", *v, "through or local");
    }
  }
  constexpr std::string_view kSize =
      "a byte count with an optional K, M, G or T suffix (powers of 1024), e.g. 8G";
  if (auto v = get("LARDER_MEM")) {
    auto n = parse_size(*v);
    if (!n) return bad("LARDER_MEM", *v, kSize);
    c.mem_budget = *n;
  }
  if (auto v = get("LARDER_DISK")) {
    auto n = parse_size(*v);
    if (!n) return bad("LARDER_DISK", *v, kSize);
    c.disk_budget = *n;
  }
  if (auto v = get("LARDER_CHUNK")) {
    auto n = parse_size(*v);
    if (!n || *n < kMinChunk || *n > kMaxChunk || *n % 4096 != 0) {
      return bad("LARDER_CHUNK", *v, "a multiple of 4K between 4K and 1G, e.g. 4M");
    }
    c.chunk_size = *n;
  }
  if (auto v = get("LARDER_DIR")) {
    if (v->front() != '/') return bad("LARDER_DIR", *v, "an absolute directory path");
    c.local_dir = path::lexically_normal(std::string(*v));
  } else if (auto t = get("TMPDIR"); t && t->front() == '/') {
    c.local_dir = path::lexically_normal(std::string(*t));
  }
  if (auto v = get("LARDER_SHM_DIR")) {
    if (v->front() != '/') return bad("LARDER_SHM_DIR", *v, "an absolute directory path");
    c.shm_dir = path::lexically_normal(std::string(*v));
  }
  if (auto v = get("LARDER_TRANSPORT")) {
    if (*v == "ucx") {
      c.transport = TransportKind::kUcx;
    } else if (*v == "mpi") {
      c.transport = TransportKind::kMpi;
    } else {
      return bad("LARDER_TRANSPORT", *v, "ucx or mpi");
    }
  }
  for (auto [name, field] : {std::pair{"LARDER_DIRECTORY_OPS", &c.directory_ops},
                             std::pair{"LARDER_REMOTE_READS", &c.remote_reads}}) {
    if (auto v = get(name)) {
      if (*v == "auto") {
        *field = DirectoryOps::kAuto;
      } else if (*v == "rma") {
        *field = DirectoryOps::kRma;
      } else if (*v == "messages") {
        *field = DirectoryOps::kMessages;
      } else {
        return bad(name, *v, "auto, rma or messages");
      }
    }
  }
  if (auto v = get("LARDER_STATS")) c.stats_path = std::string(*v);
  if (auto v = get("LARDER_LOG")) {
    auto level = log::parse_level(*v);
    if (!level) return bad("LARDER_LOG", *v, "off, error, warn, info, debug or trace");
    c.log_level = *level;
  }
  if (auto v = get("LARDER_NODE_SIZE")) {
    auto n = parse_int<int>(*v);
    if (!n || *n < 0) return bad("LARDER_NODE_SIZE", *v, "0 (real nodes) or a positive rank count");
    c.node_size = *n;
  }
  if (auto v = get("LARDER_DIR_SLOTS")) {
    auto n = parse_int<std::uint32_t>(*v);
    if (!n || *n < 64 || *n > (1u << 26)) {
      return bad("LARDER_DIR_SLOTS", *v, "an integer between 64 and 67108864");
    }
    c.dir_slots = *n;
  }
  if (auto v = get("LARDER_DIR_ENTRIES")) {
    auto n = parse_int<std::uint64_t>(*v);
    if (!n || *n < 64 || *n > (std::uint64_t{1} << 32)) {
      return bad("LARDER_DIR_ENTRIES", *v, "an integer between 64 and 4294967296");
    }
    c.dir_entries = *n;
  }
  if (auto v = get("LARDER_TIMEOUT")) {
    auto n = parse_int<std::uint32_t>(*v);
    if (!n || *n == 0 || *n > 86400) return bad("LARDER_TIMEOUT", *v, "seconds, 1 to 86400");
    c.wait_timeout = std::chrono::seconds(*n);
  }
  if (auto v = get("LARDER_REVALIDATE")) {
    auto n = parse_int<std::uint32_t>(*v);
    if (std::string_view(*v) == "off") n = 0;
    if (!n || *n > 86400) {
      return bad("LARDER_REVALIDATE", *v, "seconds, 0 or off (never) to 86400");
    }
    c.revalidate = std::chrono::seconds(*n);
  }
  if (auto v = get("LARDER_FANOUT")) {
    auto n = parse_int<std::uint32_t>(*v);
    if (!n || *n < 1 || *n > 1024) return bad("LARDER_FANOUT", *v, "an integer from 1 to 1024");
    c.fanout = *n;
  }
  if (auto v = get("LARDER_GROUP")) {
    auto n = parse_int<std::uint32_t>(*v);
    if (*v == "auto") {
      c.group = Config::kAutoGroup;
    } else if (*v == "off") {
      c.group = 0;
    } else if (!n || *n == 1 || *n > (1u << 20)) {
      return bad("LARDER_GROUP", *v, "auto, off, 0 (off) or nodes per group from 2 to 1048576");
    } else {
      c.group = *n;
    }
  }
  if (auto v = get("LARDER_LIST_AHEAD")) {
    auto n = parse_int<std::uint32_t>(*v);
    if (!n || *n > (1u << 20)) {
      return bad("LARDER_LIST_AHEAD", *v, "an integer from 0 (off) to 1048576");
    }
    c.list_ahead = *n;
  }
  if (auto v = get("LARDER_LIST_AHEAD_DIRS")) {
    auto n = parse_int<std::uint32_t>(*v);
    if (!n || *n > 64) {
      return bad("LARDER_LIST_AHEAD_DIRS", *v,
                 "an integer from 0 (in the listing call) to 64 (directories at once)");
    }
    c.list_ahead_dirs = *n;
  }
  if (auto v = get("LARDER_LOAD_PARALLEL")) {
    auto n = parse_int<std::uint32_t>(*v);
    if (!n || *n == 0 || *n > 64) {
      return bad("LARDER_LOAD_PARALLEL", *v, "an integer from 1 (one load at a time) to 64");
    }
    c.load_parallel = *n;
  }
  if (auto v = get("LARDER_PREFETCH_AHEAD")) {
    auto n = parse_int<std::uint32_t>(*v);
    if (!n || *n > (1u << 30)) {
      return bad("LARDER_PREFETCH_AHEAD", *v,
                 "an integer from 0 (no prefetch of schedules) to 1073741824 (entries ahead)");
    }
    c.prefetch_ahead = *n;
  }
  if (auto v = get("LARDER_PREFETCH_STAGE")) {
    auto n = parse_size(*v);
    if (!n) {
      return bad("LARDER_PREFETCH_STAGE", *v,
                 "0 (a schedule stops at the budget) or a size such as 128M or 1G");
    }
    c.prefetch_stage = *n;
  }
  if (auto v = get("LARDER_READAHEAD")) {
    auto n = parse_int<std::uint32_t>(*v);
    if (!n || *n > 1024) {
      return bad("LARDER_READAHEAD", *v,
                 "an integer from 0 (no read-ahead) to 1024 (chunks ahead of an in-order reader)");
    }
    c.readahead = *n;
  }
  if (auto v = get("LARDER_SMALL_FILE")) {
    auto n = parse_size(*v);
    if (!n) return bad("LARDER_SMALL_FILE", *v, kSize);
    c.small_file = *n;
  }
  if (auto v = get("LARDER_NODE_SLOTS")) {
    auto n = parse_int<std::uint32_t>(*v);
    if (!n || *n < 64 || *n > (1u << 31)) {
      return bad("LARDER_NODE_SLOTS", *v, "an integer between 64 and 2147483648");
    }
    c.node_slots = *n;
  }
  {
    // The allocation this job step belongs to: the first scheduler variable that is set.
    std::string alloc;
    for (const char* var :
         {"SLURM_JOB_ID", "PBS_JOBID", "FLUX_JOB_ID", "LSB_JOBID", "COBALT_JOBID"}) {
      if (auto v = get(var); v && !v->empty()) {
        alloc = std::string(*v);
        break;
      }
    }
    // Scheduler ids may hold characters a file name should not ('/', spaces): kept as '_'.
    for (char& ch : alloc) {
      const bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                         (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '_';
      if (!plain) ch = '_';
    }
    const std::string_view keep = get("LARDER_KEEP").value_or("auto");
    if (keep == "auto") {
      c.keep = alloc.empty() ? std::string() : "alloc-" + alloc.substr(0, 96);
    } else if (keep == "off") {
      c.keep.clear();
    } else {
      bool ok = !keep.empty() && keep.size() <= 64 && keep.front() != '.' &&
                keep.substr(0, 6) != "alloc-";
      for (char ch : keep) {
        ok = ok && ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' || ch == '_');
      }
      if (!ok) {
        return bad("LARDER_KEEP", keep,
                   "auto (keep for the allocation), off, or a name of 1 to 64 letters, digits, "
                   "'.', '-' or '_' (not starting with '.' or alloc-)");
      }
      c.keep = "name-" + std::string(keep);
    }
  }
  if (auto v = get("LARDER_KEEP_TTL")) {
    auto n = parse_int<std::uint32_t>(*v);
    if (!n || *n == 0 || *n > 365u * 86400) {
      return bad("LARDER_KEEP_TTL", *v, "seconds, 1 to 31536000");
    }
    c.keep_ttl = std::chrono::seconds(*n);
  }
  if (auto v = get("LARDER_VERIFY")) {
    auto b = parse_bool(*v);
    if (!b) return bad("LARDER_VERIFY", *v, "on or off (also 1, 0, true, false, yes, no)");
    c.verify = *b;
  }
  for (auto [var, list] : {std::pair{"LARDER_WRAPPERS", &c.wrappers},
                           std::pair{"LARDER_FORKING_WRAPPERS", &c.forking_wrappers}}) {
    auto v = get(var);
    if (!v) continue;
    std::size_t start = 0;
    while (start <= v->size()) {
      std::size_t end = v->find(':', start);
      if (end == std::string_view::npos) end = v->size();
      const std::string_view item = v->substr(start, end - start);
      if (item.find('/') != std::string_view::npos) {
        return bad(var, *v, "a colon-separated list of program names (no '/'), e.g. mywrap:launch");
      }
      if (!item.empty()) list->emplace_back(item);
      start = end + 1;
    }
  }
  return c;
}

Result<Config> Config::from_environment() {
  auto c = parse([](const char* name) { return std::getenv(name); });
  if (c.ok()) c->leave_node_local_prefixes();
  return c;
}

void Config::leave_node_local_prefixes() {
  if (local_fs != LocalFs::kBypass) return;
  // Produce directories stay: a file produced in `local` mode lives on its node by design.
  std::vector<std::string> kept;
  for (std::string& prefix : prefixes) {
    const bool made_here = std::find(produce.begin(), produce.end(), prefix) != produce.end();
    std::optional<std::string> local = made_here ? std::nullopt : node_local_file_system(prefix);
    if (local) {
      local_prefixes.push_back(prefix + " (" + *local + ")");
    } else {
      kept.push_back(std::move(prefix));
    }
  }
  prefixes = std::move(kept);
}

std::uint32_t Config::group_size(std::uint64_t nodes) const noexcept {
  if (group != kAutoGroup) return group >= nodes ? 0 : group;  // one group: no groups
  if (nodes < kAutoGroupNodes) return 0;
  std::uint32_t g = 1;
  while (static_cast<std::uint64_t>(g) * g < nodes) ++g;  // the ceiling of the square root
  return g;
}

bool Config::produced(const std::string& p) const {
  for (const std::string& dir : produce) {
    if (path::is_within(p, dir)) return true;
  }
  return false;
}

bool Config::lexically_managed(const std::string& p) const {
  for (const std::string& prefix : prefixes) {
    if (path::is_within(p, prefix)) return true;
  }
  return false;
}

}  // namespace larder
