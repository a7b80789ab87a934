// The .npy header numpy writes (numpy/lib/format.py, version 1.0, C order):
//   "\x93NUMPY" 01 00 <u16 header_len> "{'descr': '|u1', 'fortran_order': False, 'shape': (a, b,
//   c), }"
//   + (21 - len(str(shape[0]))) spaces (growth-axis room, numpy >= 1.24)
//   + spaces + "\n" so that the whole header is a multiple of 64 bytes.
// For DLIO's shapes the header is 128 bytes with or without the growth room.
#ifndef LARDER_APPS_LARDER_BENCH_DATA_NPY_FORMAT_HPP_
#define LARDER_APPS_LARDER_BENCH_DATA_NPY_FORMAT_HPP_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace larder::bench {

// descr: "|u1" (uint8) or "<i8" (int64).
std::string npy_header(std::string_view descr, const std::vector<std::int64_t>& shape);

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_DATA_NPY_FORMAT_HPP_
