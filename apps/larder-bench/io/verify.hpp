// verify: every rank reads every training (and evaluation) file through the --io backend, twice
// (the second pass is served by the cache when there is one), and compares each piece with a
// plain pread of the same bytes. The first difference is an error naming the file and offset.
// Collective. For checking a read path, not for measuring it.
#ifndef LARDER_APPS_LARDER_BENCH_IO_VERIFY_HPP_
#define LARDER_APPS_LARDER_BENCH_IO_VERIFY_HPP_

#include "apps/larder-bench/common/mpi_world.hpp"
#include "apps/larder-bench/config/workload.hpp"
#include "apps/larder-bench/io/io_backend.hpp"
#include "apps/larder-bench/output/console.hpp"

namespace larder::bench {

Status verify_dataset(const Workload& w, IoBackend& io, const MpiWorld& world, Console& console);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_IO_VERIFY_HPP_
