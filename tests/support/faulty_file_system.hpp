// FaultyFileSystem: the real file system, except for failures a test injects.
#ifndef LARDER_TESTS_SUPPORT_FAULTY_FILE_SYSTEM_HPP_
#define LARDER_TESTS_SUPPORT_FAULTY_FILE_SYSTEM_HPP_

#include <atomic>

#include "runtime/pfs/posix_file_system.hpp"

namespace larder::testing {

class FaultyFileSystem final : public FileSystem {
 public:
  explicit FaultyFileSystem(Stats& stats) : real_(stats) {}

  std::atomic<int> fail_reads_with{0};    // errno for every read (0: none)
  std::atomic<int> fail_resolve_with{0};  // errno for every resolve (0: none)

  Result<ResolvedPath> resolve(const std::string& path) override {
    if (int e = fail_resolve_with.load(); e != 0) return from_errno(e, "injected resolve failure");
    return real_.resolve(path);
  }
  Result<std::size_t> read(const std::string& path, std::uint64_t version, std::uint64_t offset,
                           std::span<std::byte> into) override {
    if (int e = fail_reads_with.load(); e != 0) return from_errno(e, "injected read failure");
    return real_.read(path, version, offset, into);
  }
  Result<FileMeta> lstat(const std::string& path) override { return real_.lstat(path); }
  Result<std::vector<std::byte>> list(const std::string& path) override { return real_.list(path); }

 private:
  PosixFileSystem real_;
};

}  // namespace larder::testing

#endif  // LARDER_TESTS_SUPPORT_FAULTY_FILE_SYSTEM_HPP_
