// TfRecordStream: a TFRecord file read front to back through one transfer_size buffer, as
// TensorFlow's TFRecordDataset(buffer_size=transfer_size) reads it. next_record() parses a
// record's length from its header and moves past its data and CRC. Not thread-safe.
#ifndef LARDER_APPS_LARDER_BENCH_IO_TFRECORD_STREAM_HPP_
#define LARDER_APPS_LARDER_BENCH_IO_TFRECORD_STREAM_HPP_

#include <cstdint>
#include <memory>
#include <string>

#include "apps/larder-bench/io/sample_reader.hpp"

namespace larder::bench {

class TfRecordStream {
 public:
  static Result<std::unique_ptr<TfRecordStream>> open(IoBackend& io, const std::string& path,
                                                      std::size_t buffer_size);

  // True when a record was consumed, false at the end of the file.
  Result<bool> next_record();
  std::uint64_t bytes_read() const noexcept { return bytes_read_; }

 private:
  TfRecordStream(std::unique_ptr<InputFile> file, std::string path, std::size_t buffer_size)
      : file_(std::move(file)), path_(std::move(path)), buf_(buffer_size) {}
  // Moves `n` bytes forward, copying them to `out` when not null; returns the bytes available
  // (fewer than n only at the end of the file).
  Result<std::uint64_t> consume(std::uint64_t n, std::uint8_t* out);

  std::unique_ptr<InputFile> file_;
  std::string path_;
  AlignedBuffer buf_;
  std::uint64_t window_start_ = 0;  // file offset of buf_[0]
  std::uint64_t window_len_ = 0;    // valid bytes in buf_
  std::uint64_t pos_ = 0;           // file offset of the next byte
  std::uint64_t bytes_read_ = 0;
};

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_IO_TFRECORD_STREAM_HPP_
