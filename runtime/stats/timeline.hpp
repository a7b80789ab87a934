// Timeline: what a rank read over time, in bounded memory whatever the job's length.
//
// A rank samples a few of its cumulative counters (the series below) when an application read
// ends and at least the current interval has passed since the last sample. Samples are
// cumulative, so thinning them loses resolution, never counts: when the rank holds
// kTimelineSamples samples it keeps every second one and doubles the interval (a 10-minute job
// and a 10-hour one hold the same 256 samples, about 20 KiB). At finalize each rank turns its
// samples into amounts per bucket of one grid that all ranks share (start: the earliest rank's
// start; width: the job's length over kTimelineBuckets) and the grids are summed (MpiJob).
#ifndef LARDER_RUNTIME_STATS_TIMELINE_HPP_
#define LARDER_RUNTIME_STATS_TIMELINE_HPP_

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

namespace larder {

// The sampled series, in the order of their values. X(name, json key)
#define LARDER_TIMELINE_SERIES(X)     \
  X(app_bytes, "app_bytes")           \
  X(self_bytes, "self_bytes")         \
  X(node_bytes, "node_bytes")         \
  X(remote_bytes, "remote_bytes")     \
  X(loaded_bytes, "loaded_bytes")     \
  X(fallback_bytes, "fallback_bytes") \
  X(pfs_bytes, "pfs_bytes")           \
  X(pfs_ops, "pfs_ops")               \
  X(kept_bytes, "kept_bytes")         \
  X(prefetch_bytes, "prefetch_bytes") \
  X(staged_bytes, "staged_bytes")

enum class Series : int {
#define LARDER_TIMELINE_ENUM(name, key) name,
  LARDER_TIMELINE_SERIES(LARDER_TIMELINE_ENUM)
#undef LARDER_TIMELINE_ENUM
      kCount
};
inline constexpr int kSeriesCount = static_cast<int>(Series::kCount);
std::string_view series_key(int series) noexcept;

inline constexpr std::size_t kTimelineSamples = 256;          // held per rank, at most
inline constexpr int kTimelineBuckets = 120;                  // of the job's timeline
inline constexpr std::int64_t kFirstIntervalNs = 10'000'000;  // 10 ms

using SeriesValues = std::array<std::uint64_t, kSeriesCount>;

struct TimelineSample {
  std::int64_t unix_ns = 0;  // CLOCK_REALTIME: comparable across nodes (their clocks are synced)
  SeriesValues values{};     // cumulative since the rank started
};

class Timeline {
 public:
  explicit Timeline(std::int64_t start_unix_ns) noexcept;
  std::int64_t start_unix_ns() const noexcept { return start_; }
  // Cheap test (one relaxed load) whether a sample is due at `unix_ns`.
  bool due(std::int64_t unix_ns) const noexcept {
    return unix_ns >= next_.load(std::memory_order_relaxed);
  }
  // Records a sample; a thread that finds another sampling skips (unless `force`: finalize).
  void sample(std::int64_t unix_ns, const SeriesValues& values, bool force = false);
  std::vector<TimelineSample> samples() const;

 private:
  std::int64_t start_;
  mutable std::mutex mu_;
  std::vector<TimelineSample> samples_;  // guarded by mu_; oldest first, <= kTimelineSamples
  std::int64_t interval_ns_ = kFirstIntervalNs;  // guarded by mu_
  std::atomic<std::int64_t> next_;               // relaxed: a hint for due()
};

// The job's timeline: amounts per bucket [start + i*bucket_ns, start + (i+1)*bucket_ns).
struct JobTimeline {
  std::int64_t start_unix_ns = 0;
  std::int64_t bucket_ns = 0;
  std::vector<std::uint64_t> amounts;  // kTimelineBuckets x kSeriesCount, bucket-major
};

// The grid every rank shares, for a job from `start` to `end` (unix ns).
JobTimeline timeline_grid(std::int64_t start, std::int64_t end);
// Adds the amounts of `samples` (cumulative from zero) to `grid`: what each sample adds over the
// one before lands in the bucket of its time (before the grid: the first; after: the last).
void add_samples(std::span<const TimelineSample> samples, JobTimeline& grid);

}  // namespace larder

#endif  // LARDER_RUNTIME_STATS_TIMELINE_HPP_
