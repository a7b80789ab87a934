// Deterministic test data: files whose every byte is a function of (seed, offset), so any read
// can be checked against a direct pread of the same file.
#ifndef LARDER_TESTS_SUPPORT_DATA_FILES_HPP_
#define LARDER_TESTS_SUPPORT_DATA_FILES_HPP_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace larder::testing {

// Writes `size` bytes of pseudo-random data derived from `seed`.
void write_data_file(const std::string& path, std::uint64_t size, std::uint64_t seed);
// Reads [offset, offset+length) with plain pread (the reference); short at EOF.
std::vector<std::byte> direct_read(const std::string& path, std::uint64_t offset,
                                   std::size_t length);
// The whole file with plain reads.
std::vector<std::byte> read_whole(const std::string& path);

}  // namespace larder::testing

#endif  // LARDER_TESTS_SUPPORT_DATA_FILES_HPP_
