// The PyTorch-style batch loader (loader.hpp).
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "apps/larder-bench/train/loader.hpp"

namespace larder::bench {

void sleep_seconds(double seconds) {
  if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

namespace {

class BatchLoader final : public Loader {
 public:
  BatchLoader(LoaderContext ctx, std::vector<Batch> batches, ReaderFactory make_reader, int threads,
              int prefetch_size)
      : ctx_(std::move(ctx)),
        batches_(std::move(batches)),
        make_reader_(std::move(make_reader)),
        slots_(batches_.size()) {
    const int factor =
        prefetch_size == 0 ? 2 : (prefetch_size + threads - 1) / std::max(threads, 1);
    window_ = static_cast<std::size_t>(std::max(threads, 1) * std::max(factor, 1));
    inline_rng_.seed(ctx_.seed);
    for (int w = 0; w < threads; ++w)
      threads_.emplace_back([this, w, threads] { work(w, threads); });
  }
  BatchLoader(const BatchLoader&) = delete;
  BatchLoader& operator=(const BatchLoader&) = delete;

  ~BatchLoader() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  Result<LoadedBatch> next() override {
    if (next_ >= batches_.size()) return Status::error("loader: no batch left in this epoch");
    if (threads_.empty()) return load_inline();
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return slots_[next_].ready; });
    Slot slot = std::move(slots_[next_]);
    ++next_;
    lock.unlock();
    cv_.notify_all();  // frees a place in the window
    if (!slot.status.ok()) return slot.status;
    return slot.batch;
  }

 private:
  struct Slot {
    bool ready = false;
    Status status;
    LoadedBatch batch;
  };

  Result<LoadedBatch> load(SampleReader& reader, const Batch& batch, std::mt19937_64& rng) {
    LoadedBatch out;
    for (const SampleRef& s : batch) {
      auto n = reader.read(ctx_.files[static_cast<std::size_t>(s.file)], s.sample);
      if (!n.ok()) return n.status();
      out.bytes += n.value();
      ++out.samples;
      if (!ctx_.preprocess_time.is_zero()) sleep_seconds(ctx_.preprocess_time.draw(rng));
    }
    return out;
  }

  Result<LoadedBatch> load_inline() {
    if (!inline_reader_) {
      auto r = make_reader_();
      if (!r.ok()) return r.status();
      inline_reader_ = std::move(r.value());
    }
    return load(*inline_reader_, batches_[next_++], inline_rng_);
  }

  void work(int w, int threads) {
    std::mt19937_64 rng(ctx_.seed + static_cast<std::uint64_t>(w));
    auto reader = make_reader_();
    for (std::size_t b = static_cast<std::size_t>(w); b < batches_.size();
         b += static_cast<std::size_t>(threads)) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || b < next_ + window_; });
        if (stop_) return;
      }
      Result<LoadedBatch> got = reader.ok() ? load(*reader.value(), batches_[b], rng)
                                            : Result<LoadedBatch>(reader.status());
      {
        std::lock_guard<std::mutex> lock(mu_);
        slots_[b].ready = true;
        slots_[b].status = got.status();
        if (got.ok()) slots_[b].batch = got.value();
      }
      cv_.notify_all();
      if (!got.ok()) return;  // the consumer stops at this batch
    }
  }

  LoaderContext ctx_;
  std::vector<Batch> batches_;
  ReaderFactory make_reader_;
  std::vector<Slot> slots_;
  std::size_t window_ = 1;
  std::size_t next_ = 0;  // the next batch the consumer takes (guarded by mu_ with threads)
  bool stop_ = false;     // guarded by mu_
  std::mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<SampleReader> inline_reader_;
  std::mt19937_64 inline_rng_{0};
  std::vector<std::thread> threads_;  // last: joined before the state above goes
};

}  // namespace

std::unique_ptr<Loader> make_batch_loader(LoaderContext ctx, std::vector<Batch> batches,
                                          ReaderFactory make_reader, int read_threads,
                                          int prefetch_size) {
  return std::make_unique<BatchLoader>(std::move(ctx), std::move(batches), std::move(make_reader),
                                       read_threads, prefetch_size);
}

}  // namespace larder::bench
