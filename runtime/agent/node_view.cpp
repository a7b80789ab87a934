#include "runtime/agent/node_view.hpp"

#include <ctime>

#include <algorithm>

#include "runtime/tier/segments.hpp"

namespace larder::agent {

Result<std::unique_ptr<NodeView>> NodeView::open(const std::string& path, std::uint64_t max,
                                                 std::vector<int> ranks, const Config& config) {
  auto table = NodeTable::view(path, max);
  if (!table.ok()) return table.status();
  std::sort(ranks.begin(), ranks.end());
  return std::unique_ptr<NodeView>(new NodeView(std::move(*table), std::move(ranks), config));
}

bool NodeView::on_node(int rank) const noexcept {
  return std::binary_search(ranks_.begin(), ranks_.end(), rank);
}

bool NodeView::fresh(std::int64_t checked_s) const noexcept {
  if (config_.revalidate.count() == 0) return true;
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) - checked_s < config_.revalidate.count();
}

std::optional<PathRecord> NodeView::path(const std::string& path, bool follow) const {
  // Paths of produced files wait for their producer: the rank's answer.
  if (config_.produced(path)) return std::nullopt;
  const NodeTable::Found f = table_->find(path_key(KeyKind::kPath, path));
  if (f.outcome != NodeTable::Found::Outcome::kReady) return std::nullopt;
  auto record = unpack<PathRecord>(f.payload);
  if (!follow && (record.error != 0 || record.file != file_id_of(path))) {
    // lstat of a path with a symlink in it: its own answer (kLinkPath), as the rank gives it.
    const NodeTable::Found l = table_->find(path_key(KeyKind::kLinkPath, path));
    if (l.outcome != NodeTable::Found::Outcome::kReady) return std::nullopt;
    record = unpack<PathRecord>(l.payload);
  }
  // An answer due for its check against the PFS is renewed by the rank, once for the node.
  if (!record.produced() && !fresh(record.checked_s)) return std::nullopt;
  return record;
}

std::optional<ChunkRecord> NodeView::chunk(const CachedFile& file, std::uint64_t index) const {
  const NodeTable::Found f = table_->find(chunk_key(file.id, index));
  if (f.outcome != NodeTable::Found::Outcome::kReady) return std::nullopt;
  const auto record = unpack<ChunkRecord>(f.payload);
  // Held on another node, or "read the PFS": the rank reads it (and counts why).
  if (record.owner < 0 || !on_node(record.owner) || record.length == 0) return std::nullopt;
  // Bytes of another version of the file (it changed during the job): the rank decides.
  if (record.version != 0 && file.version != 0 && record.version != file.version) {
    return std::nullopt;
  }
  if (record.tier == Tier::kFile && (record.segment & Segments::kKeptSegment) != 0) {
    // A kept file from an earlier step may be evicted until a rank of the node uses it.
    std::lock_guard lock(kept_mu_);
    if (!kept_known_.contains(record.segment)) return std::nullopt;
  }
  return record;
}

void NodeView::kept_file_known(std::uint32_t segment) {
  if ((segment & Segments::kKeptSegment) == 0) return;
  std::lock_guard lock(kept_mu_);
  kept_known_.insert(segment);
}

void NodeView::use_mark(std::uint32_t mark) {
  if (mark == 0) return;
  std::call_once(marks_once_, [this] {
    // A record with a mark was published after the marks were made: they exist.
    auto opened = PrefetchMarks::open(PrefetchMarks::path_for(table_->path()), false);
    if (opened.ok()) marks_ = std::move(*opened);
  });
  if (marks_ != nullptr) marks_->use(mark);
}

}  // namespace larder::agent
