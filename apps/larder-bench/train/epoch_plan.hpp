// make_epoch_loader: the loader of one epoch (or evaluation) for this rank, chosen as DLIO
// chooses its sampler (sampler.hpp): PyTorch/DALI INDEX, TensorFlow ITERATIVE, or the TFRecord
// stream pipeline.
#ifndef LARDER_APPS_LARDER_BENCH_TRAIN_EPOCH_PLAN_HPP_
#define LARDER_APPS_LARDER_BENCH_TRAIN_EPOCH_PLAN_HPP_

#include <memory>
#include <string>
#include <vector>

#include "apps/larder-bench/config/workload.hpp"
#include "apps/larder-bench/io/io_backend.hpp"
#include "apps/larder-bench/train/loader.hpp"

namespace larder::bench {

struct EpochSpec {
  const std::vector<std::string>* files = nullptr;  // sorted file list of the split
  int epoch = 1;
  std::int64_t steps = 0;
  std::int64_t batch = 1;
  int rank = 0;
  int ranks = 1;
};

std::unique_ptr<Loader> make_epoch_loader(const Workload& w, const EpochSpec& spec, IoBackend& io,
                                          bool larder_io);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_TRAIN_EPOCH_PLAN_HPP_
