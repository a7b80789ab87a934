// DLIO's HDF5 samples (hdf5_generator.py):
//   mlperf_storage v2.0: h5py.File(path, 'w'); dataset 'records' uint8 (n, d1, d2); 'labels'
//                        int64 zeros (n); chunks (1, c, c) with c = min(ceil(sqrt(chunk_size)),
//                        dimension) when enable_chunking; gzip(level) when compression is gzip
//   DLIO HEAD:           libver 'latest'; datasets 'records_0' .. 'records_{k-1}'
//                        (k = dataset.hdf5.num_dset_per_record, default 1) and 'labels'
#ifndef LARDER_APPS_LARDER_BENCH_DATA_HDF5_WRITER_HPP_
#define LARDER_APPS_LARDER_BENCH_DATA_HDF5_WRITER_HPP_

#include <cstdint>
#include <string>
#include <vector>

#include "apps/larder-bench/common/result.hpp"
#include "apps/larder-bench/data/size_plan.hpp"

namespace larder::bench {

struct Hdf5Layout {
  std::vector<std::string> record_datasets{"records"};
  bool libver_latest = false;
  std::int64_t chunk_dim = 0;  // 0: contiguous
  int gzip_level = -1;         // -1: no compression (needs chunk_dim > 0 otherwise)
};

Status write_hdf5(const std::string& path, Dims dims, std::int64_t samples,
                  const Hdf5Layout& layout, std::uint64_t seed);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_DATA_HDF5_WRITER_HPP_
