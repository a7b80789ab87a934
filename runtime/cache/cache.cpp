#include "runtime/cache/cache.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "runtime/cache/cache_resolve.hpp"
#include "runtime/chunk/chunk_math.hpp"
#include "runtime/common/log.hpp"

namespace larder {
namespace {

constexpr std::int32_t kDirectOwner = -1;  // memo marker: read this chunk from the PFS

}  // namespace

Payload Cache::direct_payload(FallbackCause cause) noexcept {
  ChunkRecord direct;
  direct.owner = kDirectOwner;
  direct.segment = static_cast<std::uint32_t>(cause);
  return pack(direct);
}

bool Cache::no_room_payload(const Payload& payload) noexcept {
  const auto record = unpack<ChunkRecord>(payload);
  return record.owner == kDirectOwner &&
         record.segment == static_cast<std::uint32_t>(FallbackCause::kNoRoom);
}

Cache::Cache(CacheParts parts)
    : config_(*parts.config),
      stats_(*parts.stats),
      pfs_(*parts.pfs),
      timed_directory_(*parts.directory, *parts.stats),
      directory_(timed_directory_),
      tiers_(*parts.tiers),
      peers_(parts.peers),
      transport_(parts.transport),
      progress_(parts.progress),
      node_(parts.node),
      load_(parts.load),
      topology_(std::move(parts.topology)),
      nodes_(static_cast<std::uint64_t>(topology_.node_count())),
      clock_(std::move(parts.clock)),
      resident_(std::move(parts.resident)),
      node_files_dir_(std::move(parts.node_files_dir)),
      segments_(parts.segments),
      objects_as_node_files_(parts.objects_as_node_files),
      kept_(parts.kept),
      kept_place_(parts.kept_place) {
  if (kept_ != nullptr) {
    tiers_.set_make_room(
        [this](Tier tier, std::uint64_t length) { return make_room(tier, length); });
  }
  if (config_.list_ahead > 0 && config_.list_ahead_dirs > 0) {
    background_ = std::make_unique<Background>(config_.list_ahead_dirs, kListAheadQueue);
  }
  if (config_.prefetch_ahead > 0) {
    prefetch_ = std::make_unique<Background>(kPrefetchBatches, kPrefetchBatches);
    if (config_.prefetch_stage > 0)
      stage_ = std::make_unique<PrefetchStage>(config_.prefetch_stage);
    if (config_.readahead > 0) readahead_ = std::make_unique<Background>(2, kReadAheadQueue);
  }
  // Node groups need a node table (one resolver per node asks for the node).
  group_size_ = node_ != nullptr ? config_.group_size(nodes_) : 0;
  tree_fanout_ = group_size_ > 0 ? std::max(1u, config_.fanout / 2) : config_.fanout;
  if (group_size_ > 0) {
    const auto node_of = [&](int r) { return static_cast<std::uint64_t>(topology_.node_of(r)); };
    group_ = node_of(topology_.rank) / group_size_;
    groups_ = (nodes_ + group_size_ - 1) / group_size_;
    group_nodes_ = std::min(group_size_, nodes_ - group_ * group_size_);
    for (int r = 0; r < topology_.size; ++r) {
      if (node_of(r) / group_size_ == group_) group_ranks_.push_back(r);
    }
  }
}

Cache::~Cache() {
  stop_background();                               // its tasks use everything below
  if (kept_ != nullptr) tiers_.set_make_room({});  // the tiers outlive the cache
}

Key Cache::group_entry(const Key& key) const noexcept {
  const int home = group_ranks_[key.check % group_ranks_.size()];
  return group_key(key, group_, home);
}

Payload Cache::group_form(const Payload& local, bool chunk, std::uint64_t group_ticket) {
  if (!chunk) return local;
  auto record = unpack<ChunkRecord>(local);
  if (record.owner < 0) return local;  // "read the PFS": the same for the group
  record.position = group_ticket;      // the root of the group's tree
  return pack(record);
}

// The memo holds what this rank knows and its node table does not: an answer the node table
// holds READY, with the same payload, is not copied into every rank's memo (issue 27: a million
// files cost each rank some 340 MB of copies of its node's table). A memo lookup that misses asks
// the node table (newest level first, no claim, no wait).
bool Cache::memo_find(const Key& key, Payload* out) {
  {
    std::shared_lock lock(memo_mu_);
    if (auto it = memo_.find(key); it != memo_.end()) {
      *out = it->second;
      return true;
    }
  }
  if (node_ == nullptr || closing()) return false;
  const NodeTable::Found f = node_->find(key);
  if (f.outcome != NodeTable::Found::Outcome::kReady) return false;
  *out = f.payload;
  return true;
}

void Cache::memo_put(const Key& key, const Payload& payload) {
  if (node_ != nullptr && !closing()) {
    const NodeTable::Found f = node_->find(key);
    if (f.outcome == NodeTable::Found::Outcome::kReady && f.payload == payload) {
      std::unique_lock lock(memo_mu_);
      memo_.erase(key);  // an older answer of this rank's, superseded by the node's
      return;
    }
  }
  std::unique_lock lock(memo_mu_);
  memo_.insert_or_assign(key, payload);
}

namespace {

std::uint64_t ns_since(std::chrono::steady_clock::time_point start) noexcept {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count());
}

thread_local int retrying = 0;  // Cache::Retry scopes open on this thread

}  // namespace

Cache::Retry::Retry() noexcept {
  ++retrying;
}
Cache::Retry::~Retry() {
  --retrying;
}

void Cache::count_directory_ops(std::uint64_t n) {
  stats_.add(Counter::directory_ops, n);
  if (retrying > 0) stats_.add(Counter::directory_retries, n);
}

NodeTable::Found Cache::node_acquire(const Key& key, std::chrono::milliseconds timeout) {
  const auto start = std::chrono::steady_clock::now();
  NodeTable::Found found = node_->acquire(key, timeout);
  stats_.add(Counter::node_ns, ns_since(start));
  return found;
}

Status Cache::timed_get(const Transport::GetOp& op) {
  const auto start = std::chrono::steady_clock::now();
  Status s = op.tier == Tier::kFile ? learn_segment(op.owner, op.segment) : Status();
  if (s.ok()) s = transport_->get(op);
  stats_.add(Counter::transport_ns, ns_since(start));
  return s;
}

void Cache::timed_get_many(std::span<const Transport::GetOp> ops, std::span<Status> out) {
  const auto start = std::chrono::steady_clock::now();
  transport_->get_many(ops, out);
  stats_.add(Counter::transport_ns, ns_since(start));
  stats_.add(Counter::transport_gets, ops.size());
}

// ---- data ------------------------------------------------------------------------------------

Result<std::size_t> Cache::read(const CachedFile& file, std::span<std::byte> into,
                                std::uint64_t offset) {
  // No notify_activity() here: a hit needs no progress, and what needs it tells the progress
  // thread itself (a directory round trip in resolve_global, a message's send, a get's wait).
  const ChunkGeometry geometry{file.size, config_.chunk_size};
  std::size_t total = 0;
  Status error;
  bool short_read = false;
  bool missed = false;
  for_each_piece(geometry, offset, into.size(), [&](const ChunkPiece& piece) {
    auto dst = into.subspan(piece.offset_in_buffer, piece.length);
    // Read ahead into the stage: no rank had room for it, so the cache would send it to the PFS
    // (or read it from the node that holds it, when it was copied ahead).
    bool copied = false;
    if (take_staged(file, piece.index, piece.offset_in_chunk, dst, true, &copied)) {
      if (copied) {
        stats_.add(Counter::hits_remote);
        stats_.add(Counter::hits_mem);
        stats_.served(Counter::served_remote_bytes, dst.size(), false);
      } else {
        stats_.fallback(file.path, FallbackCause::kNoRoom, dst.size());
      }
      total += dst.size();
      return true;
    }
    auto located = locate(file, piece.index);
    if (!located.ok()) {
      error = located.status();
      return false;
    }
    missed = missed || located->fresh || located->copied;  // read from the PFS, or another node
    FallbackCause cause = located->cause;
    if (located->source == Source::kCache &&
        copy_out(located->record, piece.offset_in_chunk, dst, !located->fresh && !located->copied,
                 &cause)) {
      if (located->copied) {  // the bytes came from another node for this read
        stats_.add(Counter::hits_remote);
        stats_.add(located->record.tier == Tier::kDisk ? Counter::hits_disk : Counter::hits_mem);
      }
      stats_.served(served_from(*located), dst.size(), located->record.tier == Tier::kDisk);
      total += dst.size();
      return true;
    }
    stats_.fallback(file.path, cause, dst.size());
    // Read ahead past the budget (the stage): the PFS's bytes, taken before the read came.
    if (take_staged(file, piece.index, piece.offset_in_chunk, dst)) {
      total += dst.size();
      return true;
    }
    auto n = read_direct(file, piece.index * config_.chunk_size + piece.offset_in_chunk, dst);
    if (!n.ok()) {
      error = n.status();
      return false;
    }
    total += *n;
    short_read = *n < dst.size();
    return !short_read;
  });
  if (total > 0) read_ahead(file, offset, total, missed);
  if (!error.ok() && total == 0) return error;
  return total;
}

// Told the order, past the budget (cache_prefetch.cpp, PrefetchStage).
bool Cache::take_staged(const CachedFile& file, std::uint64_t index, std::uint64_t offset_in_chunk,
                        std::span<std::byte> into, bool first, bool* copied) {
  if (stage_ == nullptr || file.local_only || !scheduled_.load(std::memory_order_relaxed)) {
    return false;
  }
  if (first && stage_->empty()) return false;  // most reads
  const auto start = std::chrono::steady_clock::now();
  PrefetchStage::Place position{};  // where the reads are: an absent chunk's mark says so
  if (!first) {
    std::lock_guard lock(plan_mu_);
    position = {plan_generation_, plan_position_};
  }
  const PrefetchStage::Took took = stage_->take(chunk_key(file.id, index), file.version,
                                                offset_in_chunk, into, !first, copied, position);
  if (took == PrefetchStage::Took::kAbsent) return false;
  stats_.add(Counter::prefetch_staged_reads);
  if (took == PrefetchStage::Took::kWaited) {
    stats_.add(Counter::prefetch_waited);
    stats_.add(Counter::prefetch_wait_ns, ns_since(start));
  }
  pump_prefetch();  // room in the stage for the batches ahead
  return true;
}

Counter Cache::served_from(const Located& located) const noexcept {
  if (located.copied) return Counter::served_remote_bytes;
  if (located.fresh) return Counter::served_loaded_bytes;
  if (located.record.owner == topology_.rank) return Counter::served_self_bytes;
  return on_this_node(located.record.owner) ? Counter::served_node_bytes
                                            : Counter::served_remote_bytes;
}

Result<Cache::Place> Cache::place(const CachedFile& file, std::uint64_t index) {
  // Staged past the budget: the worker asks its rank to read it (kRead), which takes it there.
  if (stage_ != nullptr && !stage_->empty() &&
      stage_->holds(chunk_key(file.id, index), file.version)) {
    return Place{};
  }
  auto located = locate(file, index);
  if (!located.ok()) return located.status();
  Place out;
  out.record = located->record;
  out.node_local = located->source == Source::kCache && on_this_node(located->record.owner);
  out.copied = located->copied;
  // A worker asks for the places of what its node does not hold: its misses continue a stream.
  read_ahead(file, index * config_.chunk_size,
             ChunkGeometry{file.size, config_.chunk_size}.chunk_length(index),
             located->fresh || located->copied);
  return out;
}

bool Cache::known_answer(const Key& key, Payload* out) {
  if (memo_find(key, out)) return true;
  if (node_ == nullptr) return false;
  const NodeTable::Found f = node_->find(key);
  if (f.outcome != NodeTable::Found::Outcome::kReady) return false;
  *out = f.payload;
  return true;
}

std::optional<ChunkRecord> Cache::known_place(const CachedFile& file, std::uint64_t index) {
  Payload payload;
  if (!known_answer(chunk_key(file.id, index), &payload)) return std::nullopt;
  const auto record = unpack<ChunkRecord>(payload);
  if (record.owner < 0 || !on_this_node(record.owner) || record.length == 0 ||
      (record.version != 0 && file.version != 0 && record.version != file.version) ||
      !kept_record_usable(record)) {
    return std::nullopt;
  }
  return record;
}

Cache::Answer Cache::loaded_answer(const Key& key, Loaded loaded) {
  if (loaded.local) {  // the directory has the keeper's copy; this node uses its own
    loaded.answer.payload = *loaded.local;
    loaded.answer.copied = true;
  } else {
    loaded.answer.fresh = true;
  }
  memo_put(key, loaded.answer.payload);
  loaded.answer.kind = Answer::Kind::kCached;
  return loaded.answer;
}

void Cache::end_node_claim(std::uint32_t slot, const Answer& a, const Payload* failed_as) {
  if (a.kind == Answer::Kind::kCached) {
    node_->publish(slot, a.payload);
  } else if (failed_as != nullptr) {
    node_->publish(slot, *failed_as);
  } else {
    node_->fail(slot);  // the node's other ranks resolve it themselves
  }
}

Result<Cache::Located> Cache::locate(const CachedFile& file, std::uint64_t index,
                                     const ChunkRecord* into, bool ahead) {
  const Key key = chunk_key(file.id, index);
  const ChunkContext context(file, index);
  // A FAILED entry: the loader could not keep it (no room, or the file is shorter than it was).
  const Payload read_pfs = direct_payload(FallbackCause::kNoRoom);
  // A chunk this rank's schedule is making ready now: this read (or a worker's, asking for the
  // place) waits for that load. Counted before it waits.
  const bool early = prefetching(key);
  if (early) stats_.add(Counter::prefetch_waited);
  const auto start =
      early ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  const Answer a = resolve(
      key, kClaimIt | kTicket,
      [&](std::uint64_t ticket) { return load_chunk(file, index, ticket, ahead, into); },
      [&](const Payload& p, const Tree& tree) {
        return localize_chunk(key, p, tree, into, &file, index);
      },
      &read_pfs);
  if (early) stats_.add(Counter::prefetch_wait_ns, ns_since(start));
  switch (a.kind) {
    case Answer::Kind::kCached: {
      const auto record = unpack<ChunkRecord>(a.payload);
      Located direct_read;
      if (record.owner == kDirectOwner) {
        direct_read.cause = record.segment < kFallbackCauses
                                ? static_cast<FallbackCause>(record.segment)
                                : FallbackCause::kOther;
        return direct_read;
      }
      // Bytes of another version of the file (it changed during the job): not these.
      if (record.version != 0 && file.version != 0 && record.version != file.version) {
        stats_.add(Counter::stale_chunks);
        direct_read.cause = FallbackCause::kChanged;
        return direct_read;
      }
      // A schedule made it ready on this node before this read came (one that waited counts
      // as waited above instead).
      if (record.ahead != 0 && !early && !a.fresh) stats_.add(Counter::prefetch_ready);
      if (record.mark != 0 && !ahead) {  // used: not in prefetch.unused_bytes
        if (PrefetchMarks* marks = this->marks()) marks->use(record.mark);
      }
      return Located{Source::kCache, record, a.fresh, a.copied};
    }
    case Answer::Kind::kError:
      return a.error;
    case Answer::Kind::kTransient:
    case Answer::Kind::kDirect:
      break;
  }
  Located direct_read;
  // The loader (this rank) had no room for it; otherwise the directory could not answer.
  direct_read.cause = a.kind == Answer::Kind::kDirect && no_room_payload(a.payload)
                          ? FallbackCause::kNoRoom
                          : FallbackCause::kDirectory;
  return direct_read;
}

Cache::Loaded Cache::load_chunk(const CachedFile& file, std::uint64_t index, std::uint64_t ticket,
                                bool prefetch, const ChunkRecord* into) {
  const ChunkGeometry geometry{file.size, config_.chunk_size};
  const std::uint64_t length = geometry.chunk_length(index);
  const Key key = chunk_key(file.id, index);
  ChunkRecord record;
  // An earlier step of the allocation kept it on this node: adopted in place, no PFS read.
  if (length > 0 && adopt_kept(key, file.version, length, into, &record)) {
    record.position = ticket;
    record_placed(key, record, KeptRecord::kOrigin);
    Loaded l;
    l.publish = true;
    l.answer.payload = pack(record);
    return l;
  }
  // Another node kept it (it said so at the step's start): that copy is the chunk's origin, and
  // this node copies it from there (checked on arrival), no PFS read.
  if (length > 0 && kept_elsewhere(key, file.version, length, &record)) {
    record.position = ticket;
    const Payload origin = pack(record);
    auto local = localize_chunk(key, origin, Tree{key, ticket, grouped() ? groups_ : nodes_}, into);
    // A kept copy whose bytes failed their check on arrival is nobody's origin: the PFS below.
    if (!local.ok() || unpack<ChunkRecord>(*local).owner >= 0) {
      Loaded l;
      l.publish = true;
      l.answer.payload = origin;
      if (local.ok() && *local != origin) l.local = *local;
      stats_.add(Counter::kept_bytes_adopted, length);
      stats_.add(Counter::kept_chunks_adopted);
      return l;
    }
  }
  std::span<std::byte> dst;
  if (into != nullptr) {
    record = *into;
    dst = own_bytes(*into);
    if (dst.size() != length || length == 0) return Loaded{};
  } else {
    auto place = tiers_.allocate(length);
    if (!place.ok()) {  // no room: everyone reads the PFS (the cause the read counts)
      Loaded l;
      l.answer.payload = direct_payload(FallbackCause::kNoRoom);
      return l;
    }
    Arena* arena = tiers_.get(place->tier);
    dst = std::span(arena->data() + place->offset, length);
    record.tier = place->tier;
    record.offset = place->offset;
  }
  auto n = pfs_.read(file.path, file.version, index * config_.chunk_size, dst);
  if (!n.ok()) {
    Loaded l;
    l.answer.kind = Answer::Kind::kError;
    l.answer.error = n.status();
    return l;
  }
  if (*n != length) {
    LARDER_LOG_LIMITED(kWarn,
                       "{} is shorter than its cached size ({} bytes): it changed during the "
                       "job; reading it from the file system",
                       file.path, file.size);
    return Loaded{};
  }
  stats_.add(prefetch ? Counter::prefetches : Counter::misses);
  stats_.add(Counter::cached_chunks);
  stats_.add(Counter::cached_bytes, length);
  record.owner = topology_.rank;
  record.length = length;
  record.position = ticket;  // the origin's place in the chunk's fan-out tree
  record.version = file.version;
  record.hash = hash_of(dst);
  record_placed(key, record, KeptRecord::kOrigin);
  Loaded l;
  l.publish = true;
  l.answer.payload = pack(record);
  return l;
}

const Arena* Cache::own_holder(const ChunkRecord& record) const {
  const Arena* holder = nullptr;
  if (record.tier == Tier::kFile) {
    holder = segments_ != nullptr ? segments_->find(record.segment) : nullptr;
  } else {
    holder = tiers_.get(record.tier);
  }
  if (holder == nullptr || record.offset + record.length > holder->capacity()) return nullptr;
  return holder;
}

std::span<std::byte> Cache::own_bytes(const ChunkRecord& record) const {
  const Arena* holder = own_holder(record);
  if (holder == nullptr) return {};
  return {holder->data() + record.offset, record.length};
}

std::span<const std::byte> Cache::node_bytes(const ChunkRecord& record) {
  if (record.owner == topology_.rank) {
    const Arena* holder = own_holder(record);  // read through its read-only view, if it has one
    if (holder == nullptr) return {};
    return {holder->view() + record.offset, record.length};
  }
  if (!on_this_node(record.owner)) return {};
  auto mapped = peers_->get(record.owner, record.tier, record.segment);
  if (!mapped.ok()) {
    LARDER_LOG_LIMITED(kWarn, "cannot map the {} of rank {}: {}",
                       record.tier == Tier::kFile ? "segment" : "arena", record.owner,
                       mapped.status().to_string());
    return {};
  }
  const Arena* holder = *mapped;
  if (record.offset + record.length > holder->capacity()) return {};
  return {holder->data() + record.offset, record.length};
}

bool Cache::copy_out(const ChunkRecord& record, std::uint64_t offset_in_chunk,
                     std::span<std::byte> into, bool count_hit, FallbackCause* why) {
  auto failed = [why](FallbackCause cause) {
    if (why != nullptr) *why = cause;
    return false;
  };
  if (offset_in_chunk + into.size() > record.length) return failed(FallbackCause::kOther);
  const auto tier_counter = record.tier == Tier::kDisk ? Counter::hits_disk : Counter::hits_mem;
  if (record.owner == topology_.rank || on_this_node(record.owner)) {
    const std::span<const std::byte> bytes = node_bytes(record);
    if (bytes.empty() && record.length > 0) return failed(FallbackCause::kTransport);
    // A disk-tier chunk read from the device now is checked first (the PFS on a mismatch).
    if (!disk_checked(record, bytes)) return failed(FallbackCause::kIntegrity);
    std::memcpy(into.data(), bytes.data() + offset_in_chunk, into.size());
    if (count_hit) {
      stats_.add(record.owner == topology_.rank ? Counter::hits_self : Counter::hits_node);
      stats_.add(tier_counter);
    }
    return true;
  }
  if (record.owner < 0 || record.owner >= topology_.size) return failed(FallbackCause::kOther);
  // A chunk of another node that this node could not copy: the piece itself, over the network,
  // straight into the caller's buffer. Checked against the chunk's hash before the caller sees
  // it: a piece of a chunk is read with the whole chunk (the hash covers the whole).
  if (transport_ == nullptr || closing()) return failed(FallbackCause::kTransport);
  const bool check = config_.verify && record.hash != 0;
  const bool whole = offset_in_chunk == 0 && into.size() == record.length;
  std::vector<std::byte> chunk;
  if (check && !whole) chunk.resize(record.length);
  const std::span<std::byte> dst = check && !whole ? std::span(chunk) : into;
  stats_.add(Counter::transport_gets);
  Transport::Hashed arrived;
  const Transport::GetOp op{record.owner,
                            record.tier,
                            record.segment,
                            record.offset + (check && !whole ? 0 : offset_in_chunk),
                            dst,
                            check ? &arrived : nullptr,
                            {record.offset, record.length, record.hash}};
  if (Status s = timed_get(op); !s.ok()) {
    if (s.native_code() == EBADMSG) {
      // The holder's own check of its chunk failed (its disk tier): the PFS, as a mismatch here.
      stats_.add(Counter::integrity_refetched);
      return failed(FallbackCause::kIntegrity);
    }
    stats_.add(Counter::transport_errors);
    LARDER_LOG_LIMITED(kWarn, "{} get of {} bytes from rank {} failed: {}", transport_->name(),
                       dst.size(), record.owner, s.to_string());
    return failed(FallbackCause::kTransport);
  }
  if (check && !verified(dst, record.hash, record.owner, "another node's memory", &arrived)) {
    stats_.add(Counter::integrity_refetched);  // the caller reads the PFS instead
    return failed(FallbackCause::kIntegrity);
  }
  if (check && !whole) std::memcpy(into.data(), chunk.data() + offset_in_chunk, into.size());
  if (load_ != nullptr) load_->fetched(record.owner, dst.size());
  if (count_hit) {
    stats_.add(Counter::hits_remote);
    stats_.add(tier_counter);
  }
  stats_.add(Counter::transport_bytes, dst.size());
  return true;
}

Result<std::size_t> Cache::read_direct(const CachedFile& file, std::uint64_t offset,
                                       std::span<std::byte> into) {
  if (file.local_only) {
    // Produced in `local` mode: the PFS has no copy, and the cache could not serve it.
    return Status(Errc::kIoError, EIO, file.path + " (produced, local mode) cannot be read");
  }
  return pfs_.read(file.path, file.version, offset, into);
}

}  // namespace larder
