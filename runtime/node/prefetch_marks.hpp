// PrefetchMarks: which chunks a node's schedules made ready were read by the node
// (prefetch.unused_bytes). One file per node beside its node table (<node table>.marks), in
// /dev/shm, created whole (fallocate, then linked into place) by the first rank of the node that
// makes a chunk ready ahead, so a job that is never told its order has none.
//
// The rank that publishes a chunk made ready ahead takes a mark for it (add(): one word, its
// length) and puts the mark in the node's record of the chunk (ChunkRecord::mark); every read of
// the node that finds that record, a rank's or a DataLoader worker's, sets the word's used bit
// (use(): a load, and an atomic OR the first time). At finalize, once every rank has drained,
// the node's leader counts the words never used: the bytes fetched ahead that nobody on the node
// read. Marks only count; a wrong word can make the figure wrong, never a read.
//
// Lock-free, for the ranks' and workers' processes alike. A node's first kCapacity chunks made
// ready ahead are marked; the rest are not (add() returns 0, the record has no mark).
#ifndef LARDER_RUNTIME_NODE_PREFETCH_MARKS_HPP_
#define LARDER_RUNTIME_NODE_PREFETCH_MARKS_HPP_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "runtime/common/status.hpp"

namespace larder {

class PrefetchMarks {
 public:
  static constexpr std::uint32_t kCapacity = 1u << 20;  // 4 MiB a node

  // Where the marks of the node whose node table is at `table_path` are.
  static std::string path_for(const std::string& table_path) { return table_path + ".marks"; }
  // The node's marks at `path`; when absent, made there if `create`, else kNotFound.
  static Result<std::unique_ptr<PrefetchMarks>> open(const std::string& path, bool create);
  PrefetchMarks(const PrefetchMarks&) = delete;
  PrefetchMarks& operator=(const PrefetchMarks&) = delete;
  ~PrefetchMarks();

  // A mark (1 ..) for a chunk of `length` bytes made ready ahead, or 0 when the node has marked
  // kCapacity already.
  std::uint32_t add(std::uint64_t length) noexcept;
  // A read of the node found the chunk marked `mark` (0, or one never given: nothing).
  void use(std::uint32_t mark) noexcept;

  struct Unused {
    std::uint64_t chunks = 0;
    std::uint64_t bytes = 0;
  };
  // The marked chunks no read has used so far.
  Unused unused() const noexcept;
  // Marks given so far (at most kCapacity).
  std::uint32_t marked() const noexcept;

 private:
  struct Layout;
  explicit PrefetchMarks(Layout* layout) noexcept : layout_(layout) {}

  Layout* layout_;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_NODE_PREFETCH_MARKS_HPP_
