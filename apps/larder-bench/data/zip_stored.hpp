// ZipStoredWriter: writes a stored (uncompressed) zip archive byte for byte as CPython's zipfile
// does for ZipFile(path, "w") + ZipFile.open(name, "w", force_zip64=True), which is how
// np.savez writes each array (dates 1980-01-01 00:00, external attributes 0o600 << 16, Unix
// creator, a zip64 extra field in every local header, zip64 end records only past 2 GiB - 1).
//
// Two CPython generations differ in the local header:
//   kModern  CPython >= 3.11.4 (gh-103861): version 4.5, 32-bit sizes 0xFFFFFFFF, sizes in the
//            zip64 extra. This is what current numpy installs write (reference hexdump).
//   kLegacy  older CPython (Debian bookworm's 3.11.2): version 2.0 and the real sizes, unless a
//            size exceeds 2 GiB - 1.
// Sizes are known in advance; the CRC is patched into the local header when a member ends.
#ifndef LARDER_APPS_LARDER_BENCH_DATA_ZIP_STORED_HPP_
#define LARDER_APPS_LARDER_BENCH_DATA_ZIP_STORED_HPP_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "apps/larder-bench/data/output_file.hpp"

namespace larder::bench {

enum class ZipStyle { kModern, kLegacy };

class ZipStoredWriter {
 public:
  ZipStoredWriter(OutputFile& file, ZipStyle style) : file_(file), style_(style) {}

  Status begin_member(const std::string& name, std::uint64_t size);
  Status write(std::span<const std::uint8_t> bytes);
  Status end_member();
  Status finish();  // central directory and end-of-archive records

 private:
  struct Member {
    std::string name;
    std::uint64_t size = 0;
    std::uint64_t offset = 0;
    std::uint32_t crc = 0;
    std::uint8_t version = 20;
  };

  std::string local_header(const Member& m) const;
  std::string central_header(const Member& m) const;
  std::string end_records(std::uint64_t cd_offset, std::uint64_t cd_size) const;

  OutputFile& file_;
  ZipStyle style_;
  std::vector<Member> members_;
  std::uint64_t written_ = 0;  // bytes of the open member so far
  bool open_ = false;
};

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_DATA_ZIP_STORED_HPP_
