// The TFRecordDataset-style stream loader (loader.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "apps/larder-bench/io/tfrecord_stream.hpp"
#include "apps/larder-bench/train/loader.hpp"

namespace larder::bench {
namespace {

class StreamLoader final : public Loader {
 public:
  StreamLoader(LoaderContext ctx, StreamPlan plan, IoBackend& io)
      : ctx_(std::move(ctx)), plan_(std::move(plan)), io_(io), bytes_(plan_.records.size(), 0) {
    int slots = 0;
    for (const StreamRecord& r : plan_.records) slots = std::max(slots, r.slot + 1);
    slot_positions_.resize(static_cast<std::size_t>(slots));
    index_in_slot_.resize(plan_.records.size());
    for (std::size_t j = 0; j < plan_.records.size(); ++j) {
      auto& list = slot_positions_[static_cast<std::size_t>(plan_.records[j].slot)];
      index_in_slot_[j] = list.size();
      list.push_back(j);
    }
    produced_.assign(static_cast<std::size_t>(slots), 0);
    consumed_.assign(static_cast<std::size_t>(slots), 0);
    const std::int64_t ahead =
        std::max(plan_.prefetch_size, 1) * plan_.batch_size * plan_.keep_every + plan_.shuffle_size;
    // Per slot, so that whichever slots hold the records the consumer waits for (a last group
    // may have a single file) can always read them.
    capacity_ = static_cast<std::size_t>(ahead + 1);
    for (int k = 0; k < slots; ++k) threads_.emplace_back([this, k] { work(k); });
  }
  StreamLoader(const StreamLoader&) = delete;
  StreamLoader& operator=(const StreamLoader&) = delete;

  ~StreamLoader() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  Result<LoadedBatch> next() override {
    LoadedBatch out;
    std::unique_lock<std::mutex> lock(mu_);
    while (out.samples < plan_.batch_size) {
      if (next_ >= plan_.records.size()) return Status::error("loader: no record left");
      const std::size_t ahead =
          std::min(next_ + static_cast<std::size_t>(plan_.shuffle_size), plan_.records.size() - 1);
      cv_.wait(lock, [&] { return !error_.ok() || (produced(next_) && produced(ahead)); });
      if (!error_.ok()) return error_;
      const std::size_t slot = static_cast<std::size_t>(plan_.records[next_].slot);
      ++consumed_[slot];
      out.bytes += bytes_[next_];
      if (static_cast<std::int64_t>(next_) % plan_.keep_every == plan_.keep_offset) ++out.samples;
      ++next_;
      cv_.notify_all();
    }
    return out;
  }

 private:
  bool produced(std::size_t j) const {
    return produced_[static_cast<std::size_t>(plan_.records[j].slot)] > index_in_slot_[j];
  }

  Status read_one(std::unique_ptr<TfRecordStream>& stream, std::int64_t& open_file,
                  const StreamRecord& r, std::uint64_t& bytes) {
    if (!stream || open_file != r.ref.file || r.ref.sample == 0) {
      auto s = TfRecordStream::open(io_, ctx_.files[static_cast<std::size_t>(r.ref.file)],
                                    plan_.buffer_size);
      if (!s.ok()) return s.status();
      stream = std::move(s.value());
      open_file = r.ref.file;
    }
    const std::uint64_t before = stream->bytes_read();
    auto more = stream->next_record();
    if (!more.ok()) return more.status();
    if (!more.value()) {
      return Status::error(fmt::format("{} has fewer than {} records",
                                       ctx_.files[static_cast<std::size_t>(r.ref.file)],
                                       r.ref.sample + 1));
    }
    bytes = stream->bytes_read() - before;
    return {};
  }

  void work(int k) {
    const auto slot = static_cast<std::size_t>(k);
    std::mt19937_64 rng(ctx_.seed + slot);
    std::unique_ptr<TfRecordStream> stream;
    std::int64_t open_file = -1;
    for (const std::size_t j : slot_positions_[slot]) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || produced_[slot] - consumed_[slot] < capacity_; });
        if (stop_) return;
      }
      std::uint64_t bytes = 0;
      Status s = read_one(stream, open_file, plan_.records[j], bytes);
      if (s.ok() && !ctx_.preprocess_time.is_zero()) sleep_seconds(ctx_.preprocess_time.draw(rng));
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!s.ok()) {
          error_ = s;
        } else {
          bytes_[j] = bytes;
          ++produced_[slot];
        }
      }
      cv_.notify_all();
      if (!s.ok()) return;
    }
  }

  LoaderContext ctx_;
  StreamPlan plan_;
  IoBackend& io_;
  std::vector<std::uint64_t> bytes_;                      // per record (guarded by mu_)
  std::vector<std::vector<std::size_t>> slot_positions_;  // records each slot reads
  std::vector<std::size_t> index_in_slot_;
  std::vector<std::size_t> produced_;  // per slot (guarded by mu_)
  std::vector<std::size_t> consumed_;  // per slot (guarded by mu_)
  std::size_t capacity_ = 1;
  std::size_t next_ = 0;  // guarded by mu_
  bool stop_ = false;     // guarded by mu_
  Status error_;          // guarded by mu_
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::thread> threads_;  // last: joined before the state above goes
};

}  // namespace

std::unique_ptr<Loader> make_stream_loader(LoaderContext ctx, StreamPlan plan, IoBackend& io) {
  return std::make_unique<StreamLoader>(std::move(ctx), std::move(plan), io);
}

}  // namespace larder::bench
