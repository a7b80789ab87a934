// Told the order (cache.hpp; docs/architecture.md, "Told the order"): a rank's schedule of
// coming reads, made ready on its node ahead of them. The schedule is walked in order, in
// batches that grow from kPrefetchFirstBatch entries (the first reads wait for the least) to
// kPrefetchMaxBatch (fewer round trips), kPrefetchBatches at once on threads of their own. Each
// batch claims its paths and chunks like list-ahead does (cache_bulk.cpp), so the node's ranks
// and the job's nodes share the work: a chunk is read from the PFS by one rank of the job and
// copied once to each node that schedules it; a read that comes while its chunk is being
// prefetched waits for that load, as for any claimed entry.
#include <algorithm>
#include <utility>

#include "runtime/cache/cache.hpp"
#include "runtime/common/log.hpp"

namespace larder {

void Cache::schedule(std::vector<ScheduledRead> reads, bool append) {
  stats_.add(Counter::prefetch_entries, reads.size());
  if (prefetch_ == nullptr) return;  // LARDER_PREFETCH_AHEAD=0: nothing is kept or fetched
  if (!reads.empty()) scheduled_.store(true, std::memory_order_relaxed);
  {
    std::lock_guard lock(plan_mu_);
    if (!append) {
      // The batches of the old schedule still running finish (what they claimed is published);
      // those queued see the new generation and do nothing.
      ++plan_generation_;
      plan_.clear();
      plan_base_ = 0;
      plan_next_ = 0;
      plan_position_ = 0;
      plan_batches_ = 0;
      plan_full_ = false;
    }
    plan_.insert(plan_.end(), std::make_move_iterator(reads.begin()),
                 std::make_move_iterator(reads.end()));
  }
  pump_prefetch();
}

void Cache::schedule_position(std::uint64_t position) {
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(plan_mu_);
    if (position <= plan_position_) return;
    plan_position_ = position;
    generation = plan_generation_;
  }
  // Staged chunks the reads went far past without taking (a schedule the reads left) make room
  // for the ones ahead.
  if (stage_ != nullptr && !stage_->empty() && position > kStageLag) {
    const PrefetchStage::Dropped d = stage_->drop_passed(generation, position, kStageLag);
    stats_.add(Counter::prefetch_unused_chunks, d.chunks);
    stats_.add(Counter::prefetch_unused_bytes, d.bytes);
  }
  pump_prefetch();
}

void Cache::settle_prefetch() {
  if (prefetch_ != nullptr) prefetch_->settle();
  if (readahead_ != nullptr) readahead_->settle();
}

void Cache::pump_prefetch() {
  if (prefetch_ == nullptr || closing()) return;
  std::lock_guard lock(plan_mu_);
  const std::uint64_t end = plan_base_ + plan_.size();
  const std::uint64_t limit = plan_position_ + config_.prefetch_ahead;
  // One batch until one has said how large the entries are; then as many entries in flight as
  // kPrefetchInFlight holds (small files: kPrefetchBatches batches of up to kPrefetchMaxBatch;
  // files of several chunks: fewer entries per batch).
  const std::uint32_t at_once = plan_entry_bytes_ == 0 ? 1 : kPrefetchBatches;
  const std::uint64_t in_flight_entries =
      plan_entry_bytes_ == 0 ? kPrefetchMaxBatch
                             : std::max<std::uint64_t>(1, kPrefetchInFlight / plan_entry_bytes_);
  // Past the budget the stage bounds the bytes ahead: batches wait while it is full of chunks
  // used before the next entry (a read that takes a staged chunk pumps again).
  while (
      plan_running_ < at_once && plan_next_ < end && plan_next_ < limit && !plan_full_ &&
      (stage_ == nullptr || !plan_staging_ || !stage_->full_for({plan_generation_, plan_next_}))) {
    const std::uint64_t want = std::min(
        {kPrefetchMaxBatch, kPrefetchFirstBatch << std::min(plan_batches_, std::uint32_t{8}),
         std::max<std::uint64_t>(1, in_flight_entries / kPrefetchBatches)});
    const std::uint64_t n = std::min({want, end - plan_next_, limit - plan_next_});
    const auto from = plan_.begin() + static_cast<std::ptrdiff_t>(plan_next_ - plan_base_);
    std::vector<ScheduledRead> batch(from, from + static_cast<std::ptrdiff_t>(n));
    const std::uint64_t generation = plan_generation_;
    const std::uint64_t first = plan_next_;
    ++plan_running_;
    const bool queued =
        prefetch_->submit([this, generation, first, b = std::move(batch)]() mutable {
          run_prefetch(generation, first, std::move(b));
        });
    if (!queued) {  // stopped (the job ends), or no thread: the reads load on demand
      --plan_running_;
      return;
    }
    // Entries behind the reported position are fetched all the same: a loader reports what it
    // has handed out, ahead of its reads (a DataLoader draws its sampler prefetch_factor x
    // workers batches ahead of the workers), and an entry the reads did load already costs the
    // batch a lookup in this rank's memo.
    if (plan_next_ < plan_position_) {
      stats_.add(Counter::prefetch_passed, std::min(plan_position_ - plan_next_, n));
    }
    plan_next_ += n;
    ++plan_batches_;
  }
  // Entries handed out are dropped once they are half the schedule: a rank holds what is ahead.
  const std::uint64_t done = plan_next_ - plan_base_;
  if (done >= kPrefetchMaxBatch && done * 2 >= plan_.size()) {
    plan_.erase(plan_.begin(), plan_.begin() + static_cast<std::ptrdiff_t>(done));
    plan_base_ = plan_next_;
  }
}

void Cache::run_prefetch(std::uint64_t generation, std::uint64_t first,
                         std::vector<ScheduledRead> batch) {
  bool current = false;
  {
    std::lock_guard lock(plan_mu_);
    current = generation == plan_generation_;
  }
  bool fits = true;
  std::uint64_t covered = 0;
  if (current && !closing()) {
    try {
      fits = prefetch_batch(batch, PrefetchStage::Place{generation, first}, &covered);
    } catch (const std::exception& e) {  // what it claimed was published or failed: reads go on
      LARDER_LOG_LIMITED(kWarn, "a prefetch batch failed: {}", e.what());
    }
  }
  {
    std::lock_guard lock(plan_mu_);
    --plan_running_;
    // Past the budget: with a stage the schedule goes on into it, without one it stops.
    if (!fits && generation == plan_generation_) {
      if (stage_ != nullptr) {
        plan_staging_ = true;
      } else {
        plan_full_ = true;
      }
    }
    if (covered > 0) plan_entry_bytes_ = std::max<std::uint64_t>(1, covered / batch.size());
  }
  pump_prefetch();
}

bool Cache::prefetching(const Key& key) {
  if (in_flight_n_.load(std::memory_order_relaxed) == 0) return false;  // most reads
  std::lock_guard lock(in_flight_mu_);
  return in_flight_.contains(key);
}

}  // namespace larder
