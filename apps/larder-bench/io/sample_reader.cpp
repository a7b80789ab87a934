#include "apps/larder-bench/io/sample_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace larder::bench {
namespace {

constexpr std::uint64_t kToEnd = std::numeric_limits<std::uint64_t>::max();

class WholeFileReader final : public SampleReader {
 public:
  WholeFileReader(IoBackend& io, std::size_t transfer, bool memory)
      : io_(io), buf_(transfer), memory_(memory) {}

  Result<std::uint64_t> read(const std::string& path, std::int64_t /*sample*/) override {
    if (memory_ && path == last_path_) return std::uint64_t{0};
    auto file = io_.open(path);
    if (!file.ok()) return file.status();
    auto n = read_range(*file.value(), buf_.span(), 0, kToEnd);
    if (n.ok()) last_path_ = path;
    return n;
  }

 private:
  IoBackend& io_;
  AlignedBuffer buf_;
  bool memory_;
  std::string last_path_;
};

class RecordReader final : public SampleReader {
 public:
  RecordReader(IoBackend& io, std::size_t transfer, std::int64_t records)
      : io_(io), buf_(transfer), records_(records) {}

  Result<std::uint64_t> read(const std::string& path, std::int64_t sample) override {
    auto file = io_.open(path);
    if (!file.ok()) return file.status();
    auto size = file.value()->size();
    if (!size.ok()) return size.status();
    const std::uint64_t record = size.value() / static_cast<std::uint64_t>(records_);
    return read_range(*file.value(), buf_.span(), record * static_cast<std::uint64_t>(sample),
                      record);
  }

 private:
  IoBackend& io_;
  AlignedBuffer buf_;
  std::int64_t records_;
};

}  // namespace

Result<std::uint64_t> read_range(InputFile& file, std::span<std::uint8_t> buf, std::uint64_t offset,
                                 std::uint64_t length) {
  std::uint64_t done = 0;
  while (done < length) {
    const std::size_t want =
        static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), length - done));
    auto n = file.pread(buf.first(want), offset + done);
    if (!n.ok()) return n.status();
    if (n.value() == 0) break;
    done += n.value();
  }
  return done;
}

Result<std::unique_ptr<SampleReader>> make_sample_reader(const Workload& w, IoBackend& io,
                                                         bool larder_io) {
  const auto transfer = static_cast<std::size_t>(w.transfer_bytes());
  switch (w.dataset.format) {
    case Format::kNpz:
    case Format::kNpy:
      return std::unique_ptr<SampleReader>(
          new WholeFileReader(io, transfer, w.reader.read_type == ReadType::kMemory));
    case Format::kTfrecord:
      return std::unique_ptr<SampleReader>(
          new RecordReader(io, transfer, w.dataset.num_samples_per_file));
    case Format::kHdf5:
#if LARDER_BENCH_HAVE_HDF5
      return make_hdf5_reader(w, io, larder_io);
#else
      (void)larder_io;
      return Status::error("this larder-bench was built without HDF5");
#endif
  }
  return Status::error("unknown format");
}

}  // namespace larder::bench
