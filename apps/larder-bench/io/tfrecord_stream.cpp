#include "apps/larder-bench/io/tfrecord_stream.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace larder::bench {

Result<std::unique_ptr<TfRecordStream>> TfRecordStream::open(IoBackend& io, const std::string& path,
                                                             std::size_t buffer_size) {
  auto file = io.open(path);
  if (!file.ok()) return file.status();
  return std::unique_ptr<TfRecordStream>(
      new TfRecordStream(std::move(file.value()), path, buffer_size));
}

Result<std::uint64_t> TfRecordStream::consume(std::uint64_t n, std::uint8_t* out) {
  std::uint64_t done = 0;
  while (done < n) {
    if (pos_ < window_start_ || pos_ >= window_start_ + window_len_) {
      const std::span<std::uint8_t> buf = buf_.span();
      auto got = file_->pread(buf, pos_);
      if (!got.ok()) return got.status();
      bytes_read_ += got.value();
      window_start_ = pos_;
      window_len_ = got.value();
      if (window_len_ == 0) return done;  // end of file
    }
    const std::uint64_t in_window = window_start_ + window_len_ - pos_;
    const std::uint64_t take = std::min(in_window, n - done);
    if (out != nullptr) std::memcpy(out + done, buf_.span().data() + (pos_ - window_start_), take);
    pos_ += take;
    done += take;
  }
  return done;
}

Result<bool> TfRecordStream::next_record() {
  std::uint8_t header[12];
  auto got = consume(sizeof header, header);
  if (!got.ok()) return got.status();
  if (got.value() == 0) return false;
  if (got.value() < sizeof header) {
    return Status::error(fmt::format("{}: truncated record header at {}", path_, pos_));
  }
  std::uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = (length << 8) | header[i];
  auto body = consume(length + 4, nullptr);  // data + masked crc
  if (!body.ok()) return body.status();
  if (body.value() < length + 4) {
    return Status::error(fmt::format("{}: truncated record of {} bytes", path_, length));
  }
  return true;
}

}  // namespace larder::bench
