// IoBackend: how sample bytes are read (the --io modes).
//   posix    open/pread/close (also used for --io preload: the same calls, interposed by
//            liblarder_preload.so when the job is launched with LD_PRELOAD)
//   larder   larder_open/larder_pread/larder_close from Larder's C API
// Both are thread-safe: reader threads open their own files. Buffers passed to pread must be
// 4 KiB aligned when O_DIRECT (reader.odirect) is on.
#ifndef LARDER_APPS_LARDER_BENCH_IO_IO_BACKEND_HPP_
#define LARDER_APPS_LARDER_BENCH_IO_IO_BACKEND_HPP_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "apps/larder-bench/common/result.hpp"

namespace larder::bench {

class InputFile {
 public:
  virtual ~InputFile() = default;
  // Bytes read (0 at end of file).
  virtual Result<std::size_t> pread(std::span<std::uint8_t> into, std::uint64_t offset) = 0;
  virtual Result<std::uint64_t> size() = 0;
};

class IoBackend {
 public:
  virtual ~IoBackend() = default;
  virtual Result<std::unique_ptr<InputFile>> open(const std::string& path) = 0;
};

std::unique_ptr<IoBackend> make_posix_backend(bool odirect);
std::unique_ptr<IoBackend> make_larder_backend();

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_IO_IO_BACKEND_HPP_
