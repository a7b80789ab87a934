// SampleReader: reads one sample the way DLIO's reader for the format does (read_type
// on_demand: open, read, close per sample).
//   npz, npy   the whole file, sequentially, in transfer_size pieces (np.load reads all of x)
//   tfrecord   the sample's record (files hold equal records)
//   hdf5       records[sample] through the HDF5 library (h5py's f['records'][i]); with the larder
//              backend, the HDF5 library finds the contiguous dataset's offset once per file
//              and the slab is read through Larder
// read_type memory keeps the last file's bytes: the next sample of the same file reads nothing.
// One reader per thread (not thread-safe); the backend is shared.
#ifndef LARDER_APPS_LARDER_BENCH_IO_SAMPLE_READER_HPP_
#define LARDER_APPS_LARDER_BENCH_IO_SAMPLE_READER_HPP_

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>

#include "apps/larder-bench/common/result.hpp"
#include "apps/larder-bench/config/workload.hpp"
#include "apps/larder-bench/io/io_backend.hpp"

namespace larder::bench {

// A 4 KiB-aligned buffer (O_DIRECT needs it).
class AlignedBuffer {
 public:
  explicit AlignedBuffer(std::size_t size)
      : size_((size + 4095) / 4096 * 4096),
        data_(static_cast<std::uint8_t*>(std::aligned_alloc(4096, size_))) {}
  std::span<std::uint8_t> span() const noexcept { return {data_.get(), size_}; }
  bool valid() const noexcept { return data_ != nullptr; }

 private:
  struct Free {
    void operator()(std::uint8_t* p) const noexcept { std::free(p); }
  };
  std::size_t size_;
  std::unique_ptr<std::uint8_t, Free> data_;
};

class SampleReader {
 public:
  virtual ~SampleReader() = default;
  // Returns the bytes read from the file (or the cache).
  virtual Result<std::uint64_t> read(const std::string& path, std::int64_t sample) = 0;
};

// `larder_io`: the backend is Larder's API (matters for hdf5 only).
Result<std::unique_ptr<SampleReader>> make_sample_reader(const Workload& w, IoBackend& io,
                                                         bool larder_io);

// Reads [offset, offset + length) (to end of file if shorter) in buffer-sized pieces.
Result<std::uint64_t> read_range(InputFile& file, std::span<std::uint8_t> buf, std::uint64_t offset,
                                 std::uint64_t length);

#if LARDER_BENCH_HAVE_HDF5
Result<std::unique_ptr<SampleReader>> make_hdf5_reader(const Workload& w, IoBackend& io,
                                                       bool larder_io);
#endif

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_IO_SAMPLE_READER_HPP_
