// Larder's own counters for this rank, read through larder_stats_json(). Available when the
// Larder runtime runs in this process (--io larder; the preload library or the VOL connector
// when they export Larder's C API), absent otherwise.
#ifndef LARDER_APPS_LARDER_BENCH_IO_LARDER_PROBE_HPP_
#define LARDER_APPS_LARDER_BENCH_IO_LARDER_PROBE_HPP_

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace larder::bench {

// The counters larder-bench reports, by their path in Larder's stats JSON (docs/stats.md).
inline constexpr std::array<std::string_view, 11> kLarderCounterPaths = {
    "pfs.bytes_read", "pfs.read_ops", "hits.self", "hits.node",      "hits.remote", "hits.tier.mem",
    "hits.tier.disk", "misses",       "fallbacks", "app.bytes_read", "cache.bytes"};

using LarderCounters = std::array<std::uint64_t, kLarderCounterPaths.size()>;

std::optional<LarderCounters> read_larder_counters();

// b - a, element-wise.
LarderCounters counters_delta(const LarderCounters& a, const LarderCounters& b);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_IO_LARDER_PROBE_HPP_
