#include "apps/larder-bench/train/sampler.hpp"

#include <algorithm>

#include "apps/larder-bench/common/legacy_random.hpp"

namespace larder::bench {

std::int64_t steps_per_epoch(std::int64_t files, std::int64_t nspf, std::int64_t batch, int ranks,
                             std::int64_t total_training_steps) {
  // math.floor(nspf * files / batch / P) on exact integers
  const std::int64_t steps = (nspf * files) / (batch * ranks);
  return total_training_steps > 0 ? std::min(steps, total_training_steps) : steps;
}

std::vector<SampleRef> index_samples(std::int64_t files, std::int64_t nspf, int rank, int ranks) {
  const std::int64_t total = files * nspf;
  const std::int64_t spp = (total + ranks - 1) / ranks;
  const std::int64_t begin = std::min(total, spp * rank);
  const std::int64_t end = std::min(total, spp * (rank + 1));
  std::vector<SampleRef> out;
  out.reserve(static_cast<std::size_t>(end - begin));
  for (std::int64_t g = begin; g < end; ++g) out.push_back({g / nspf, g % nspf});
  return out;
}

std::vector<Batch> make_batches(const std::vector<SampleRef>& samples, std::int64_t batch,
                                std::int64_t steps) {
  std::vector<Batch> out;
  const auto n = static_cast<std::int64_t>(samples.size()) / batch;
  for (std::int64_t b = 0; b < std::min(n, steps); ++b) {
    out.emplace_back(samples.begin() + b * batch, samples.begin() + (b + 1) * batch);
  }
  return out;
}

std::vector<std::int64_t> shuffled_files(std::int64_t files, Shuffle shuffle, std::uint32_t seed,
                                         int epoch, bool seed_change_epoch) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(files));
  for (std::int64_t i = 0; i < files; ++i) order[static_cast<std::size_t>(i)] = i;
  if (shuffle != Shuffle::kOff) {
    LegacyRandom rng(seed_change_epoch ? seed + static_cast<std::uint32_t>(epoch) : seed);
    rng.shuffle(order);
  }
  return order;
}

std::vector<SampleRef> through_order(std::vector<SampleRef> samples,
                                     const std::vector<std::int64_t>& order) {
  for (SampleRef& s : samples) s.file = order[static_cast<std::size_t>(s.file)];
  return samples;
}

std::vector<std::int64_t> tf_rank_files(const std::vector<std::int64_t>& order, int rank,
                                        int ranks) {
  if (static_cast<std::int64_t>(order.size()) < ranks) return order;
  std::vector<std::int64_t> out;
  for (std::size_t i = static_cast<std::size_t>(rank); i < order.size();
       i += static_cast<std::size_t>(ranks)) {
    out.push_back(order[i]);
  }
  return out;
}

std::vector<StreamRecord> tf_interleave(const std::vector<std::int64_t>& files, std::int64_t nspf,
                                        int cycle, std::int64_t count) {
  std::vector<StreamRecord> out;
  if (files.empty() || count <= 0) return out;
  const auto nfiles = static_cast<std::int64_t>(files.size());
  const std::int64_t width = std::clamp<std::int64_t>(cycle, 1, nfiles);
  out.reserve(static_cast<std::size_t>(count));
  // Every file has nspf records, so the files of a group end together and the next `width`
  // files take their slots.
  for (std::int64_t group = 0;; group += width) {
    const std::int64_t first = group % nfiles;
    const std::int64_t in_group = std::min(width, nfiles - first);
    for (std::int64_t rec = 0; rec < nspf; ++rec) {
      for (std::int64_t slot = 0; slot < in_group; ++slot) {
        out.push_back(
            {{files[static_cast<std::size_t>(first + slot)], rec}, static_cast<int>(slot)});
        if (static_cast<std::int64_t>(out.size()) == count) return out;
      }
    }
  }
}

}  // namespace larder::bench
