// DLIO's npz and npy samples (npz_generator.py, npy_generator.py):
//   npz: np.savez(path, x=uint8 array (d1, d2, n), y=[0] * n)   two stored zip members
//        size = d1*d2*n + 8n + 490 bytes (n = 1: + 498); x data starts at byte 183
//   npy: np.save(path, uint8 array (d1, d2, n))                  128-byte header + data
// The array bytes come from `content` (seeded_content(seed) in generate, output_file.hpp).
#ifndef LARDER_APPS_LARDER_BENCH_DATA_NPZ_WRITER_HPP_
#define LARDER_APPS_LARDER_BENCH_DATA_NPZ_WRITER_HPP_

#include <cstdint>
#include <string>

#include "apps/larder-bench/common/result.hpp"
#include "apps/larder-bench/data/output_file.hpp"
#include "apps/larder-bench/data/size_plan.hpp"
#include "apps/larder-bench/data/zip_stored.hpp"

namespace larder::bench {

Status write_npz(const std::string& path, Dims dims, std::int64_t samples, const ContentFn& content,
                 ZipStyle style);
Status write_npy(const std::string& path, Dims dims, std::int64_t samples,
                 const ContentFn& content);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_DATA_NPZ_WRITER_HPP_
