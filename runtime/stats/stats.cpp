#include "runtime/stats/stats.hpp"

#include <fmt/format.h>

#include <unistd.h>
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "runtime/common/sys.hpp"
#include "runtime/common/unique_fd.hpp"
#include "runtime/common/units.hpp"

namespace larder {
namespace {

constexpr std::array<std::string_view, kCounterCount> kPaths = {
#define LARDER_STATS_PATH(name, path) path,
    LARDER_STATS_COUNTERS(LARDER_STATS_PATH)
#undef LARDER_STATS_PATH
};

// Sets j["a"]["b"] for the dotted path "a.b".
void set_dotted(nlohmann::json& j, std::string_view path, std::uint64_t value) {
  nlohmann::json* node = &j;
  std::size_t start = 0;
  for (;;) {
    const std::size_t dot = path.find('.', start);
    const std::string part(
        path.substr(start, dot == std::string_view::npos ? path.npos : dot - start));
    if (dot == std::string_view::npos) {
      (*node)[part] = value;
      return;
    }
    node = &(*node)[part];
    start = dot + 1;
  }
}

nlohmann::json file_list(std::span<const FileEntry> entries, std::size_t most, bool causes) {
  nlohmann::json list = nlohmann::json::array();
  for (const FileEntry& e : entries) {
    if (e.used == 0 || list.size() == most) continue;
    const std::string path(e.path, ::strnlen(e.path, kFilePathBytes));
    if (causes) {
      list.push_back({{"path", path},
                      {"cause", cause_name(static_cast<FallbackCause>(e.cause))},
                      {"count", e.ops}});
    } else {
      list.push_back({{"path", path}, {"bytes", e.bytes}, {"ops", e.ops}, {"over", e.over}});
    }
  }
  return list;
}

// The job report's parts (docs/user-guide.md, "The stats file").
void write_detail(nlohmann::json& j, const JobDetail& d) {
  nlohmann::json& job = j["job"];
  job = {{"nodes", d.job.nodes},
         {"ranks_per_node", d.job.ranks_per_node},
         {"start_unix_ns", d.job.start_unix_ns},
         {"duration_ns", d.job.duration_ns},
         {"mpi", d.job.mpi},
         {"transport", d.job.transport},
         {"directory", d.job.directory},
         {"version", d.job.version},
         {"host", d.job.host}};
  job["settings"] = nlohmann::json::object();
  for (const auto& [name, value] : d.job.settings) job["settings"][name] = value;
  nlohmann::json& t = j["timeline"];
  t = {{"start_unix_ns", d.timeline.start_unix_ns},
       {"bucket_ns", d.timeline.bucket_ns},
       {"buckets", kTimelineBuckets}};
  for (int k = 0; k < kSeriesCount; ++k) {
    std::vector<std::uint64_t> series(kTimelineBuckets, 0);
    for (std::size_t b = 0; b < series.size(); ++b) {
      const std::size_t i = b * kSeriesCount + static_cast<std::size_t>(k);
      if (i < d.timeline.amounts.size()) series[b] = d.timeline.amounts[i];
    }
    t["series"][std::string(series_key(k))] = series;
  }
  constexpr std::size_t kShown = 20;
  j["top_files"]["by_bytes"] = file_list(d.files.by_bytes, kShown, false);
  j["top_files"]["by_ops"] = file_list(d.files.by_ops, kShown, false);
  j["fallback_files"] = file_list(d.files.fallbacks, kShown, true);
}

}  // namespace

int spread_bucket(std::uint64_t value) noexcept {
  return value == 0 ? 0 : static_cast<int>(std::bit_width(value));
}

Spread spread_of(std::span<const std::uint64_t> per_rank, std::span<const int> node_of) {
  Spread s;
  if (per_rank.empty()) return s;
  // The middle value; of an even count, the mean of the two middle ones.
  auto median_of = [](std::vector<std::uint64_t> v) {
    const std::size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
    const std::uint64_t upper = v[mid];
    if (v.size() % 2 != 0) return upper;
    const std::uint64_t lower =
        *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
    return lower + (upper - lower) / 2;
  };
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    s.total += per_rank[r];
    if (per_rank[r] > s.max) {
      s.max = per_rank[r];
      s.max_rank = static_cast<int>(r);
    }
    ++s.ranks_log2[static_cast<std::size_t>(spread_bucket(per_rank[r]))];
  }
  s.median = median_of({per_rank.begin(), per_rank.end()});
  // The largest few, largest first (ties: the lower rank).
  std::vector<int> order(per_rank.size());
  for (std::size_t r = 0; r < order.size(); ++r) order[r] = static_cast<int>(r);
  const std::size_t top = std::min(kTopRanks, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(),
                    [&](int a, int b) {
                      const auto va = per_rank[static_cast<std::size_t>(a)];
                      const auto vb = per_rank[static_cast<std::size_t>(b)];
                      return va != vb ? va > vb : a < b;
                    });
  const bool nodes_known = node_of.size() == per_rank.size();
  for (std::size_t i = 0; i < top; ++i) {
    const auto r = static_cast<std::size_t>(order[i]);
    s.top_ranks.push_back({order[i], nodes_known ? node_of[r] : -1, per_rank[r]});
  }
  if (!nodes_known) return s;
  s.max_node = node_of[static_cast<std::size_t>(s.max_rank)];
  const int nodes = *std::max_element(node_of.begin(), node_of.end()) + 1;
  if (nodes <= 0) return s;
  std::vector<std::uint64_t> sums(static_cast<std::size_t>(nodes), 0);
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    if (node_of[r] >= 0) sums[static_cast<std::size_t>(node_of[r])] += per_rank[r];
  }
  for (std::size_t n = 0; n < sums.size(); ++n) {
    if (s.node_max_node < 0 || sums[n] > s.node_max) {
      s.node_max = sums[n];
      s.node_max_node = static_cast<int>(n);
    }
    ++s.nodes_log2[static_cast<std::size_t>(spread_bucket(sums[n]))];
  }
  s.node_median = median_of(sums);
  return s;
}

void StatsSnapshot::add(const StatsSnapshot& other) noexcept {
  for (int i = 0; i < kCounterCount; ++i) counters[i] += other.counters[i];
  for (int i = 0; i < kLatencyBuckets; ++i) latency[i] += other.latency[i];
  latency_sum_ns += other.latency_sum_ns;
  if (other.latency_max_ns > latency_max_ns) latency_max_ns = other.latency_max_ns;
}

std::uint64_t StatsSnapshot::latency_quantile_ns(double q) const noexcept {
  std::uint64_t total = 0;
  for (std::uint64_t b : latency) total += b;
  if (total == 0) return 0;
  const auto target = static_cast<std::uint64_t>(q * static_cast<double>(total));
  std::uint64_t seen = 0;
  for (int i = 0; i < kLatencyBuckets; ++i) {
    seen += latency[i];
    if (seen > target) return 2ull << i;
  }
  return latency_max_ns;
}

std::string StatsSnapshot::to_json() const {
  nlohmann::json j;
  j["ranks"] = ranks;
  for (int i = 0; i < kCounterCount; ++i) set_dotted(j, kPaths[i], counters[i]);
  std::uint64_t reads = 0;
  for (std::uint64_t b : latency) reads += b;
  j["latency"]["reads"] = reads;
  j["latency"]["mean_ns"] = reads == 0 ? 0 : latency_sum_ns / reads;
  j["latency"]["p50_ns"] = latency_quantile_ns(0.50);
  j["latency"]["p99_ns"] = latency_quantile_ns(0.99);
  j["latency"]["max_ns"] = latency_max_ns;
  j["latency"]["histogram_log2_ns"] = latency;
  if (skew) {
    const bool nodes = skew->bytes_served.max_node >= 0;
    auto put = [&j, nodes](const char* name, const Spread& sp) {
      nlohmann::json& m = j["skew"][name];
      m = {{"max", sp.max}, {"median", sp.median}, {"total", sp.total}, {"max_rank", sp.max_rank}};
      m["ranks_log2"] = sp.ranks_log2;
      m["top_ranks"] = nlohmann::json::array();
      for (const RankValue& t : sp.top_ranks) {
        m["top_ranks"].push_back({{"rank", t.rank}, {"node", t.node}, {"value", t.value}});
      }
      if (!nodes) return;
      m["max_node"] = sp.max_node;
      m["nodes"] = {{"max", sp.node_max},
                    {"median", sp.node_median},
                    {"max_node", sp.node_max_node},
                    {"log2", sp.nodes_log2}};
    };
    put("bytes_served", skew->bytes_served);
    put("directory_ops_received", skew->directory_ops_received);
    put("remote_fetches", skew->remote_fetches);
    put("wait_ns", skew->wait_ns);
  }
  if (detail) write_detail(j, *detail);
  return j.dump(2) + "\n";
}

std::string StatsSnapshot::summary_line() const {
  const std::uint64_t hits =
      get(Counter::hits_self) + get(Counter::hits_node) + get(Counter::hits_remote);
  const std::uint64_t lookups = hits + get(Counter::misses) + get(Counter::fallbacks);
  const double hit_rate =
      lookups == 0 ? 0.0 : 100.0 * static_cast<double>(hits) / static_cast<double>(lookups);
  std::string line = fmt::format(
      "larder: {} ranks, pfs read {} in {} ops ({} stat, {} list), hits {:.1f}% (self {}, node {}, "
      "remote {}), misses {}, fallbacks {}, transport {}, app read {}",
      ranks, format_size(get(Counter::pfs_bytes_read)), get(Counter::pfs_read_ops),
      get(Counter::pfs_stat_ops), get(Counter::pfs_list_ops), hit_rate, get(Counter::hits_self),
      get(Counter::hits_node), get(Counter::hits_remote), get(Counter::misses),
      get(Counter::fallbacks), format_size(get(Counter::transport_bytes)),
      format_size(get(Counter::app_bytes_read)));
  // What came from earlier job steps, and what failed a check, only when there is any.
  if (get(Counter::kept_bytes_adopted) != 0 || get(Counter::kept_bytes_kept) != 0) {
    line +=
        fmt::format(", from earlier steps {} ({} chunks), kept for later steps {}",
                    format_size(get(Counter::kept_bytes_adopted)),
                    get(Counter::kept_chunks_adopted), format_size(get(Counter::kept_bytes_kept)));
  }
  if (get(Counter::integrity_mismatches) != 0) {
    line += fmt::format(", integrity mismatches {} (read again: {}, once per node: {})",
                        get(Counter::integrity_mismatches), get(Counter::integrity_refetched),
                        get(Counter::integrity_reloaded));
  }
  return line;
}

void Stats::record_latency(std::uint64_t ns) noexcept {
  const int bucket =
      ns == 0 ? 0 : std::min(kLatencyBuckets - 1, static_cast<int>(std::bit_width(ns)) - 1);
  latency_[bucket].fetch_add(1, std::memory_order_relaxed);
  latency_sum_ns_.fetch_add(ns, std::memory_order_relaxed);
  std::uint64_t prev = latency_max_ns_.load(std::memory_order_relaxed);
  while (ns > prev && !latency_max_ns_.compare_exchange_weak(prev, ns, std::memory_order_relaxed)) {
  }
}

std::string_view larder_version() noexcept {
  return LARDER_VERSION_STRING;
}

std::int64_t unix_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Recorder::Recorder() noexcept
    : steady_start_(std::chrono::steady_clock::now()), timeline_(unix_now_ns()) {}

std::int64_t Recorder::unix_ns(std::chrono::steady_clock::time_point t) const noexcept {
  return timeline_.start_unix_ns() +
         std::chrono::duration_cast<std::chrono::nanoseconds>(t - steady_start_).count();
}

void Stats::record_app_read(std::uint64_t bytes,
                            std::chrono::steady_clock::time_point start) noexcept {
  add(Counter::app_read_calls);
  add(Counter::app_bytes_read, bytes);
  const auto now = std::chrono::steady_clock::now();
  record_latency(static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(now - start).count()));
  maybe_sample(now);
}

void Stats::served(Counter source, std::uint64_t bytes, bool disk) noexcept {
  add(source, bytes);
  if (disk) add(Counter::served_disk_bytes, bytes);
}

void Stats::fallback(std::string_view path, FallbackCause cause, std::uint64_t bytes) noexcept {
  add(Counter::fallbacks);
  add(static_cast<Counter>(static_cast<int>(Counter::fallback_no_room) + static_cast<int>(cause)));
  add(Counter::served_fallback_bytes, bytes);
  if (Recorder* r = recorder_.load(std::memory_order_acquire)) r->files().fallback(path, cause);
}

void Stats::pfs_op(Counter op, std::string_view path, std::uint64_t bytes) noexcept {
  add(op);
  if (bytes != 0) add(Counter::pfs_bytes_read, bytes);
  if (Recorder* r = recorder_.load(std::memory_order_acquire)) r->files().pfs_op(path, bytes);
}

SeriesValues Stats::series() const noexcept {
  auto get = [this](Counter c) {
    return counters_[static_cast<int>(c)].load(std::memory_order_relaxed);
  };
  SeriesValues v{};
  auto set = [&v](Series s, std::uint64_t value) { v[static_cast<std::size_t>(s)] = value; };
  set(Series::app_bytes, get(Counter::app_bytes_read));
  set(Series::self_bytes, get(Counter::served_self_bytes));
  set(Series::node_bytes, get(Counter::served_node_bytes));
  set(Series::remote_bytes, get(Counter::served_remote_bytes));
  set(Series::loaded_bytes, get(Counter::served_loaded_bytes));
  set(Series::fallback_bytes, get(Counter::served_fallback_bytes));
  set(Series::pfs_bytes, get(Counter::pfs_bytes_read));
  set(Series::pfs_ops, get(Counter::pfs_read_ops) + get(Counter::pfs_open_ops) +
                           get(Counter::pfs_stat_ops) + get(Counter::pfs_list_ops));
  set(Series::kept_bytes, get(Counter::kept_bytes_adopted));
  set(Series::prefetch_bytes, get(Counter::prefetch_bytes));
  set(Series::staged_bytes, get(Counter::prefetch_staged_bytes));
  return v;
}

void Stats::maybe_sample(std::chrono::steady_clock::time_point now) noexcept {
  Recorder* r = recorder_.load(std::memory_order_acquire);
  if (r == nullptr) return;
  const std::int64_t unix_ns = r->unix_ns(now);
  if (!r->timeline().due(unix_ns)) return;
  try {
    r->timeline().sample(unix_ns, series());
  } catch (...) {  // a sample is statistics: never worth failing a read
  }
}

void Stats::final_sample() {
  if (Recorder* r = recorder_.load(std::memory_order_acquire)) {
    r->timeline().sample(unix_now_ns(), series(), true);
  }
}

void Stats::add(const StatsSnapshot& other) noexcept {
  for (int i = 0; i < kCounterCount; ++i) {
    if (other.counters[i] != 0)
      counters_[i].fetch_add(other.counters[i], std::memory_order_relaxed);
  }
  for (int i = 0; i < kLatencyBuckets; ++i) {
    if (other.latency[i] != 0) latency_[i].fetch_add(other.latency[i], std::memory_order_relaxed);
  }
  latency_sum_ns_.fetch_add(other.latency_sum_ns, std::memory_order_relaxed);
  std::uint64_t prev = latency_max_ns_.load(std::memory_order_relaxed);
  while (other.latency_max_ns > prev &&
         !latency_max_ns_.compare_exchange_weak(prev, other.latency_max_ns,
                                                std::memory_order_relaxed)) {
  }
}

StatsSnapshot Stats::snapshot() const noexcept {
  StatsSnapshot s;
  for (int i = 0; i < kCounterCount; ++i)
    s.counters[i] = counters_[i].load(std::memory_order_relaxed);
  for (int i = 0; i < kLatencyBuckets; ++i)
    s.latency[i] = latency_[i].load(std::memory_order_relaxed);
  s.latency_sum_ns = latency_sum_ns_.load(std::memory_order_relaxed);
  s.latency_max_ns = latency_max_ns_.load(std::memory_order_relaxed);
  return s;
}

Status write_stats_file(const std::string& path, const StatsSnapshot& snapshot) {
  const std::string text = snapshot.to_json();
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  UniqueFd fd(sys::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return from_errno(errno, "cannot create stats file " + tmp);
  if (sys::write_full(fd.get(), text.data(), text.size()) < 0) {
    const int err = errno;
    sys::unlink(tmp.c_str());
    return from_errno(err, "cannot write stats file " + tmp);
  }
  fd.reset();
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    sys::unlink(tmp.c_str());
    return from_errno(err, "cannot rename stats file to " + path);
  }
  return {};
}

}  // namespace larder
