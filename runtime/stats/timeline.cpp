#include "runtime/stats/timeline.hpp"

#include <algorithm>

namespace larder {
namespace {

constexpr std::array<std::string_view, kSeriesCount> kKeys = {
#define LARDER_TIMELINE_KEY(name, key) key,
    LARDER_TIMELINE_SERIES(LARDER_TIMELINE_KEY)
#undef LARDER_TIMELINE_KEY
};

}  // namespace

std::string_view series_key(int series) noexcept {
  return series >= 0 && series < kSeriesCount ? kKeys[static_cast<std::size_t>(series)] : "";
}

Timeline::Timeline(std::int64_t start_unix_ns) noexcept
    : start_(start_unix_ns), next_(start_unix_ns + kFirstIntervalNs) {
  samples_.reserve(kTimelineSamples);
}

void Timeline::sample(std::int64_t unix_ns, const SeriesValues& values, bool force) {
  std::unique_lock lock(mu_, std::defer_lock);
  if (force) {
    lock.lock();
  } else if (!lock.try_lock()) {
    return;
  }
  if (!force && unix_ns < next_.load(std::memory_order_relaxed)) return;  // another just did
  if (samples_.size() == kTimelineSamples) {
    // Keep every second sample, the newest included: counts are cumulative, none is lost.
    std::size_t kept = 0;
    for (std::size_t i = 1; i < samples_.size(); i += 2) samples_[kept++] = samples_[i];
    samples_.resize(kept);
    interval_ns_ *= 2;
  }
  samples_.push_back(TimelineSample{unix_ns, values});
  next_.store(unix_ns + interval_ns_, std::memory_order_relaxed);
}

std::vector<TimelineSample> Timeline::samples() const {
  std::lock_guard lock(mu_);
  return samples_;
}

JobTimeline timeline_grid(std::int64_t start, std::int64_t end) {
  JobTimeline grid;
  grid.start_unix_ns = start;
  const std::int64_t length = std::max<std::int64_t>(end - start, 1);
  grid.bucket_ns = std::max<std::int64_t>((length + kTimelineBuckets - 1) / kTimelineBuckets, 1);
  grid.amounts.assign(static_cast<std::size_t>(kTimelineBuckets) * kSeriesCount, 0);
  return grid;
}

void add_samples(std::span<const TimelineSample> samples, JobTimeline& grid) {
  if (grid.bucket_ns <= 0 || grid.amounts.size() < std::size_t{kTimelineBuckets} * kSeriesCount) {
    return;
  }
  SeriesValues before{};
  for (const TimelineSample& s : samples) {
    const std::int64_t at = (s.unix_ns - grid.start_unix_ns) / grid.bucket_ns;
    const auto bucket =
        static_cast<std::size_t>(std::clamp<std::int64_t>(at, 0, kTimelineBuckets - 1));
    for (int k = 0; k < kSeriesCount; ++k) {
      const auto i = static_cast<std::size_t>(k);
      // Counters only grow; a smaller value (never expected) adds nothing.
      if (s.values[i] > before[i])
        grid.amounts[bucket * kSeriesCount + i] += s.values[i] - before[i];
      before[i] = std::max(before[i], s.values[i]);
    }
  }
}

}  // namespace larder
