// FileTable: the descriptors of managed files opened through Larder.
//
// Each descriptor number is reserved by opening /dev/null, so it can never collide with a
// descriptor the application or a library opens. The entry keeps the file's identity and the
// read position of read()/lseek().
#ifndef LARDER_RUNTIME_API_FILE_TABLE_HPP_
#define LARDER_RUNTIME_API_FILE_TABLE_HPP_

#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "runtime/cache/cache.hpp"
#include "runtime/cache/records.hpp"

namespace larder {

struct OpenFile {
  CachedFile file;
  FileMeta meta;
  int flags = 0;
  std::mutex position_mu;
  std::uint64_t position = 0;  // guarded by position_mu
};

class FileTable {
 public:
  FileTable() = default;
  FileTable(const FileTable&) = delete;
  FileTable& operator=(const FileTable&) = delete;
  ~FileTable();

  // Reserves a descriptor number for `file`; -1 with errno on failure.
  int add(std::shared_ptr<OpenFile> file);
  std::shared_ptr<OpenFile> find(int fd) const;
  // Removes and closes `fd`; false when it is not ours.
  bool remove(int fd);
  std::size_t size() const;

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<int, std::shared_ptr<OpenFile>> files_;  // guarded by mu_
};

}  // namespace larder

#endif  // LARDER_RUNTIME_API_FILE_TABLE_HPP_
