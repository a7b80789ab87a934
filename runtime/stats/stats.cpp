#include "runtime/stats/stats.hpp"

#include <fmt/format.h>

#include <unistd.h>
#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
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

}  // namespace

Spread spread_of(std::span<const std::uint64_t> per_rank) {
  Spread s;
  if (per_rank.empty()) return s;
  std::vector<std::uint64_t> sorted(per_rank.begin(), per_rank.end());
  for (std::size_t r = 0; r < per_rank.size(); ++r) {
    s.total += per_rank[r];
    if (per_rank[r] > s.max) {
      s.max = per_rank[r];
      s.max_rank = static_cast<int>(r);
    }
  }
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2),
                   sorted.end());
  s.median = sorted[sorted.size() / 2];
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
    auto put = [&j](const char* name, const Spread& sp) {
      j["skew"][name] = {
          {"max", sp.max}, {"median", sp.median}, {"total", sp.total}, {"max_rank", sp.max_rank}};
    };
    put("bytes_served", skew->bytes_served);
    put("directory_ops_received", skew->directory_ops_received);
    put("remote_fetches", skew->remote_fetches);
    put("wait_ns", skew->wait_ns);
  }
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
    line += fmt::format(", integrity mismatches {} (read again: {})",
                        get(Counter::integrity_mismatches), get(Counter::integrity_refetched));
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

void Stats::record_app_read(std::uint64_t bytes,
                            std::chrono::steady_clock::time_point start) noexcept {
  add(Counter::app_read_calls);
  add(Counter::app_bytes_read, bytes);
  record_latency(static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count()));
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
