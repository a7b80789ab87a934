// Listing: a cached directory listing, as readdir() hands it out.
//
// `records` holds `count` struct dirent64 records (getdents64 layout, 8-byte aligned), with d_off
// rewritten to the record's ordinal (1, 2, ...): the cookie telldir() returns and seekdir()
// takes. `error` is the errno of listing the directory (then there are no records).
#ifndef LARDER_RUNTIME_CACHE_LISTING_HPP_
#define LARDER_RUNTIME_CACHE_LISTING_HPP_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace larder {

struct Listing {
  int error = 0;
  std::vector<std::byte> records;
  std::size_t count = 0;

  // Rewrites d_off of raw getdents64 records to ordinals and counts them. False when the bytes
  // are not a well-formed sequence of records (then the listing must not be used).
  bool adopt(std::vector<std::byte> raw);
  // Byte offsets of each record in `records` (for seekdir and scandir).
  std::vector<std::size_t> offsets() const;
  // The names of the entries, without "." and "..".
  std::vector<std::string> names() const;
  // How many entries may be files: regular files, symbolic links, and entries whose type the
  // file system did not give (DT_UNKNOWN). Directories and other types are not counted.
  std::size_t files() const;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_CACHE_LISTING_HPP_
