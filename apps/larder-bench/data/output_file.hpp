// OutputFile: a file being generated (one owner of the descriptor), and the pseudo-random
// sample content written into it.
//
// Content: DLIO fills samples with random uint8 (numpy's randint or default_rng); only sizes and
// layout matter for I/O, so larder-bench writes a fast position-addressed stream instead
// (splitmix64 of the 8-byte word index mixed with a per-file seed): the same bytes whatever the
// chunking, and reproducible.
#ifndef LARDER_APPS_LARDER_BENCH_DATA_OUTPUT_FILE_HPP_
#define LARDER_APPS_LARDER_BENCH_DATA_OUTPUT_FILE_HPP_

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "apps/larder-bench/common/result.hpp"

namespace larder::bench {

void fill_content(std::uint64_t seed, std::uint64_t offset, std::span<std::uint8_t> out) noexcept;

// Fills `out` with the array bytes that start at `offset` (writers take one, tests pass zeros).
using ContentFn = std::function<void(std::uint64_t offset, std::span<std::uint8_t> out)>;
inline ContentFn seeded_content(std::uint64_t seed) {
  return [seed](std::uint64_t offset, std::span<std::uint8_t> out) {
    fill_content(seed, offset, out);
  };
}

class OutputFile {
 public:
  // Creates or truncates `path` (mode 0644).
  static Result<OutputFile> create(const std::string& path);

  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  ~OutputFile();

  Status write(std::span<const std::uint8_t> bytes);
  Status write(std::string_view bytes);
  Status pwrite(std::span<const std::uint8_t> bytes, std::uint64_t offset);
  std::uint64_t position() const noexcept { return position_; }
  Status close();  // reports close(2)'s error; the destructor closes silently (error paths)

 private:
  OutputFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
  std::uint64_t position_ = 0;
};

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_DATA_OUTPUT_FILE_HPP_
