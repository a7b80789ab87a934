// Read-ahead (cache.hpp; docs/architecture.md, "Read-ahead"): a rank that reads a file of
// several chunks in order has its next LARDER_READAHEAD chunks made ready on its node while it
// copies the current one, as the kernel reads ahead of a sequential reader. Without it each
// chunk's PFS read, hash and claim wait for the read that needs it. A stream starts at a read
// that missed and is confirmed by the next read that continues it (a random reader, e.g. HDF5
// over chunked datasets, costs nothing ahead); its chunks are located as reads locate them
// (Cache::locate), so the node's ranks and the job's nodes share the work, and a read that
// comes first waits for its chunk's load, never a second PFS read. A rank that was told the
// order leaves it to the schedule.
#include <algorithm>
#include <exception>

#include "runtime/cache/cache.hpp"
#include "runtime/chunk/chunk_math.hpp"
#include "runtime/common/log.hpp"

namespace larder {

void Cache::read_ahead(const CachedFile& file, std::uint64_t offset, std::uint64_t length,
                       bool missed) {
  const std::uint64_t chunk = config_.chunk_size;
  // A file of one chunk (most files of a dataset) has nothing to read ahead.
  if (readahead_ == nullptr || file.local_only || file.size <= chunk || length == 0) return;
  // Most reads: hits of a file nobody follows.
  if (!missed && readahead_n_.load(std::memory_order_relaxed) == 0) return;
  if (scheduled_.load(std::memory_order_relaxed) || closing()) return;
  const std::uint64_t chunks = ChunkGeometry{file.size, chunk}.chunk_count();
  const std::uint64_t end = offset + length;
  const std::uint64_t last = (end - 1) / chunk;
  std::uint64_t from = 0;
  std::uint64_t to = 0;
  {
    std::lock_guard lock(readahead_mu_);
    auto it = std::find_if(streams_.begin(), streams_.end(),
                           [&](const ReadStream& s) { return s.file == file.id; });
    if (it != streams_.end() && offset >= it->next &&
        (offset - it->next < chunk || offset <= it->ahead * chunk)) {
      // It continues the stream: it starts where the last read ended, less than a chunk further,
      // or in (or just after) the chunks asked for ahead: a worker's reads of those are hits its
      // rank never sees.
      it->next = end;
      from = std::max(it->ahead, last + 1);
      const std::uint64_t target = std::min<std::uint64_t>(chunks, last + 1 + config_.readahead);
      if (target > from) {
        to = target;
        it->ahead = target;
      }
      if (last + 1 >= chunks) streams_.erase(it);
    } else if (missed && last + 1 < chunks) {
      // A stream may start here: nothing ahead until the next read continues it.
      if (it == streams_.end()) {
        if (streams_.size() >= kReadAheadStreams) streams_.erase(streams_.begin());
        streams_.push_back(ReadStream{file.id, end, last + 1});
      } else {
        *it = ReadStream{file.id, end, last + 1};
      }
    } else if (it != streams_.end()) {
      streams_.erase(it);  // a read elsewhere in the file (or of it again): no stream
    }
    readahead_n_.store(streams_.size(), std::memory_order_relaxed);
  }
  if (to <= from) return;
  if (!readahead_->submit([this, file, from, to] { run_read_ahead(file, from, to); })) {
    // Stopped (the job ends) or the queue is full: those chunks are read on demand.
    std::lock_guard lock(readahead_mu_);
    for (ReadStream& s : streams_) {
      if (s.file == file.id && s.ahead == to) s.ahead = from;
    }
  }
}

// Each chunk as a read would locate it, one after another: a copy from another node goes through
// the chunk's fan-out tree (a hot file read ahead by every node still costs each holder at most
// LARDER_FANOUT copies), and every check on arrival applies. A chunk the node holds costs a
// lookup; one another rank of the node is resolving is waited for.
void Cache::run_read_ahead(const CachedFile& file, std::uint64_t from, std::uint64_t to) {
  const ChunkGeometry geometry{file.size, config_.chunk_size};
  for (std::uint64_t i = from; i < to && !closing(); ++i) {
    const Key key = chunk_key(file.id, i);
    Payload known;
    if (known_answer(key, &known)) continue;  // the node has its answer
    // No room: read on demand (nothing is evicted for read-ahead).
    if (geometry.chunk_length(i) > room()) return;
    try {
      auto located = locate(file, i, nullptr, /*ahead=*/true);
      if (!located.ok() || located->source != Source::kCache) continue;
      if (!located->fresh && !located->copied) continue;  // found on the node: nothing done
      stats_.add(Counter::readahead_chunks);
      stats_.add(Counter::readahead_bytes, located->record.length);
    } catch (const std::exception& e) {  // what it claimed was published or failed: reads go on
      LARDER_LOG_LIMITED(kWarn, "a read-ahead of {} failed: {}", file.path, e.what());
      return;
    }
  }
}

}  // namespace larder
