#include "runtime/cache/cache.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>

#include "runtime/chunk/chunk_math.hpp"
#include "runtime/common/log.hpp"
#include "runtime/path/path.hpp"

namespace larder {
namespace {

// Errors that are answers about the path (cached like a successful stat); anything else (EIO,
// ENOMEM...) says nothing lasting and is not cached.
bool is_lasting_error(int err) noexcept {
  return err == ENOENT || err == ENOTDIR || err == EACCES || err == ELOOP || err == ENAMETOOLONG ||
         err == EPERM;
}

constexpr std::int32_t kDirectOwner = -1;  // memo marker: read this chunk from the PFS

}  // namespace

Cache::Cache(CacheParts parts)
    : config_(*parts.config),
      stats_(*parts.stats),
      pfs_(*parts.pfs),
      directory_(*parts.directory),
      tiers_(*parts.tiers),
      peers_(parts.peers),
      transport_(parts.transport),
      progress_(parts.progress),
      topology_(std::move(parts.topology)),
      remote_copies_(parts.config->remote_copies) {}

bool Cache::memo_find(const Key& key, Payload* out) {
  std::shared_lock lock(memo_mu_);
  auto it = memo_.find(key);
  if (it == memo_.end()) return false;
  *out = it->second;
  return true;
}

void Cache::memo_put(const Key& key, const Payload& payload) {
  std::unique_lock lock(memo_mu_);
  memo_.insert_or_assign(key, payload);
}

// ---- metadata --------------------------------------------------------------------------------

Result<PathRecord> Cache::lookup(const std::string& path) {
  return lookup_key(path, path_key(KeyKind::kPath, path), false);
}

Result<PathRecord> Cache::lookup_link(const std::string& path) {
  auto followed = lookup(path);
  if (followed.ok() && followed->error == 0 && followed->file == file_id_of(path)) return followed;
  return lookup_key(path, path_key(KeyKind::kLinkPath, path), true);
}

Result<PathRecord> Cache::lookup_key(const std::string& path, const Key& key, bool link) {
  Payload payload;
  if (memo_find(key, &payload)) {
    stats_.add(Counter::meta_hits);
    return unpack<PathRecord>(payload);
  }
  if (closing()) return resolve_and_publish(path, key, false, link);
  stats_.add(Counter::directory_ops);
  auto claim = directory_.acquire(key);
  if (!claim.ok()) {
    LARDER_LOG_LIMITED(kDebug, "directory cannot hold {}: {}", path, claim.status().to_string());
    return resolve_and_publish(path, key, false, link);
  }
  if (claim->outcome == Claim::Outcome::kLoading) {
    stats_.add(Counter::waits);
    claim = directory_.wait(key, config_.wait_timeout);
    if (!claim.ok()) return resolve_and_publish(path, key, false, link);
  }
  switch (claim->outcome) {
    case Claim::Outcome::kReady:
      stats_.add(Counter::meta_hits);
      memo_put(key, claim->payload);
      return unpack<PathRecord>(claim->payload);
    case Claim::Outcome::kClaimed:
      return resolve_and_publish(path, key, true, link);
    case Claim::Outcome::kLoading:
    case Claim::Outcome::kFailed:
      break;
  }
  return resolve_and_publish(path, key, false, link);
}

Result<PathRecord> Cache::resolve_and_publish(const std::string& path, const Key& key, bool claimed,
                                              bool link) {
  stats_.add(Counter::meta_misses);
  PathRecord record;
  int error = 0;
  if (link) {
    auto meta = pfs_.lstat(path);
    if (meta.ok()) {
      record.meta = *meta;
      record.file = file_id_of(path);
      record.flags = PathRecord::kManaged;  // the link itself lies where it is written
    } else if (meta.status().code() == Errc::kUnavailable) {
      if (claimed) (void)directory_.abandon(key);
      return meta.status();
    } else {
      error = meta.status().native_code();
    }
  } else {
    auto resolved = pfs_.resolve(path);
    if (resolved.ok()) {
      record.meta = resolved->meta;
      record.file = file_id_of(resolved->canonical);
      const bool managed =
          config_.prefixes.empty() || config_.lexically_managed(resolved->canonical);
      record.flags = managed ? PathRecord::kManaged : 0;
    } else {
      error = resolved.status().native_code();
    }
  }
  if (error != 0) {
    record.error = error;
    if (!is_lasting_error(record.error)) {
      if (claimed) (void)directory_.abandon(key);
      return record;  // an answer for this call only
    }
  }
  const Payload payload = pack(record);
  if (claimed) {
    if (Status s = directory_.publish(key, payload); !s.ok()) {
      LARDER_LOG_LIMITED(kWarn, "cannot publish metadata of {}: {}", path, s.to_string());
    }
  }
  memo_put(key, payload);
  return record;
}

// ---- listings --------------------------------------------------------------------------------

Result<std::shared_ptr<const Listing>> Cache::list(const std::string& path) {
  {
    std::shared_lock lock(memo_mu_);
    if (auto it = listings_.find(path); it != listings_.end()) {
      stats_.add(Counter::meta_hits);
      return it->second;
    }
  }
  const Key key = path_key(KeyKind::kListing, path);
  Payload payload;
  if (memo_find(key, &payload)) return fetch_listing(path, unpack<ListingRecord>(payload));
  if (closing()) return list_direct(path);
  stats_.add(Counter::directory_ops);
  auto claim = directory_.acquire(key);
  if (!claim.ok()) return list_direct(path);
  if (claim->outcome == Claim::Outcome::kLoading) {
    stats_.add(Counter::waits);
    claim = directory_.wait(key, config_.wait_timeout);
    if (!claim.ok()) return list_direct(path);
  }
  switch (claim->outcome) {
    case Claim::Outcome::kReady:
      memo_put(key, claim->payload);
      return fetch_listing(path, unpack<ListingRecord>(claim->payload));
    case Claim::Outcome::kClaimed:
      return load_listing(path, key);
    case Claim::Outcome::kLoading:
    case Claim::Outcome::kFailed:
      break;
  }
  return list_direct(path);
}

std::shared_ptr<const Listing> Cache::remember_listing(const std::string& path,
                                                       std::shared_ptr<const Listing> listing) {
  std::unique_lock lock(memo_mu_);
  return listings_.try_emplace(path, std::move(listing)).first->second;
}

std::shared_ptr<const Listing> Cache::fetch_listing(const std::string& path,
                                                    const ListingRecord& rec) {
  stats_.add(Counter::meta_hits);
  auto listing = std::make_shared<Listing>();
  if (rec.error != 0) {
    listing->error = rec.error;
    return remember_listing(path, std::move(listing));
  }
  std::vector<std::byte> blob(rec.length);
  ChunkRecord where;
  where.owner = rec.owner;
  where.tier = rec.tier;
  where.offset = rec.offset;
  where.length = rec.length;
  if (!copy_out(where, 0, blob, false) || !listing->adopt(std::move(blob)) ||
      listing->count != rec.count) {
    LARDER_LOG_LIMITED(kWarn, "cannot fetch the cached listing of {}; listing it directly", path);
    return list_direct(path);
  }
  return remember_listing(path, std::move(listing));
}

std::shared_ptr<const Listing> Cache::load_listing(const std::string& path, const Key& key) {
  stats_.add(Counter::meta_misses);
  auto listing = std::make_shared<Listing>();
  auto raw = pfs_.list(path);
  if (!raw.ok()) {
    listing->error = raw.status().native_code() != 0 ? raw.status().native_code() : EIO;
    if (!is_lasting_error(listing->error)) {
      (void)directory_.abandon(key);
      return listing;  // an answer for this call only
    }
    ListingRecord rec;
    rec.error = listing->error;
    const Payload payload = pack(rec);
    if (Status s = directory_.publish(key, payload); !s.ok()) {
      LARDER_LOG_LIMITED(kWarn, "cannot publish the listing of {}: {}", path, s.to_string());
    }
    memo_put(key, payload);
    return remember_listing(path, std::move(listing));
  }
  if (!listing->adopt(std::move(*raw))) {
    (void)directory_.abandon(key);
    listing->error = EIO;
    return listing;
  }
  auto place = tiers_.allocate(listing->records.size());
  if (!place.ok()) {
    (void)directory_.abandon(key);  // everyone lists it directly
    return remember_listing(path, std::move(listing));
  }
  Arena* arena = tiers_.get(place->tier);
  if (!listing->records.empty()) {
    std::memcpy(arena->data() + place->offset, listing->records.data(), listing->records.size());
  }
  ListingRecord rec;
  rec.owner = topology_.rank;
  rec.tier = place->tier;
  rec.offset = place->offset;
  rec.length = listing->records.size();
  rec.count = listing->count;
  const Payload payload = pack(rec);
  if (Status s = directory_.publish(key, payload); !s.ok()) {
    LARDER_LOG_LIMITED(kWarn, "cannot publish the listing of {}: {}", path, s.to_string());
  }
  memo_put(key, payload);
  return remember_listing(path, std::move(listing));
}

std::shared_ptr<const Listing> Cache::list_direct(const std::string& path) {
  auto listing = std::make_shared<Listing>();
  auto raw = pfs_.list(path);
  if (!raw.ok()) {
    listing->error = raw.status().native_code() != 0 ? raw.status().native_code() : EIO;
    return listing;
  }
  if (!listing->adopt(std::move(*raw))) listing->error = EIO;
  return listing;
}

// ---- data ------------------------------------------------------------------------------------

Result<std::size_t> Cache::read(const CachedFile& file, std::span<std::byte> into,
                                std::uint64_t offset) {
  if (progress_ != nullptr) progress_->notify_activity();
  const ChunkGeometry geometry{file.size, config_.chunk_size};
  std::size_t total = 0;
  Status error;
  bool short_read = false;
  for_each_piece(geometry, offset, into.size(), [&](const ChunkPiece& piece) {
    auto dst = into.subspan(piece.offset_in_buffer, piece.length);
    auto located = locate(file, piece.index);
    if (!located.ok()) {
      error = located.status();
      return false;
    }
    if (located->source == Source::kCache &&
        copy_out(located->record, piece.offset_in_chunk, dst, !located->fresh)) {
      total += dst.size();
      return true;
    }
    stats_.add(Counter::fallbacks);
    auto n = read_direct(file, piece.index * config_.chunk_size + piece.offset_in_chunk, dst);
    if (!n.ok()) {
      error = n.status();
      return false;
    }
    total += *n;
    short_read = *n < dst.size();
    return !short_read;
  });
  if (!error.ok() && total == 0) return error;
  return total;
}

Result<Cache::Place> Cache::place(const CachedFile& file, std::uint64_t index) {
  if (progress_ != nullptr) progress_->notify_activity();
  auto located = locate(file, index);
  if (!located.ok()) return located.status();
  Place out;
  out.record = located->record;
  const int owner = located->record.owner;
  out.node_local = located->source == Source::kCache && owner >= 0 && owner < topology_.size &&
                   (owner == topology_.rank ||
                    (peers_ != nullptr && topology_.same_node(owner, topology_.rank)));
  return out;
}

Result<Cache::Located> Cache::locate(const CachedFile& file, std::uint64_t index) {
  const Key key = chunk_key(file.id, index);
  Payload payload;
  if (memo_find(key, &payload)) {
    const auto record = unpack<ChunkRecord>(payload);
    return Located{record.owner == kDirectOwner ? Source::kDirect : Source::kCache, record};
  }
  if (closing()) return Located{};
  stats_.add(Counter::directory_ops);
  auto claim = directory_.acquire(key);
  if (!claim.ok()) {
    LARDER_LOG_LIMITED(kDebug, "directory cannot hold chunk {} of {}: {}", index, file.path,
                       claim.status().to_string());
    return Located{};
  }
  if (claim->outcome == Claim::Outcome::kLoading) {
    stats_.add(Counter::waits);
    claim = directory_.wait(key, config_.wait_timeout);
    if (!claim.ok()) {
      LARDER_LOG_LIMITED(kWarn, "waiting for chunk {} of {} failed: {}", index, file.path,
                         claim.status().to_string());
      return Located{};
    }
  }
  switch (claim->outcome) {
    case Claim::Outcome::kReady: {
      memo_put(key, claim->payload);
      return Located{Source::kCache, unpack<ChunkRecord>(claim->payload)};
    }
    case Claim::Outcome::kClaimed:
      return load(file, index, key);
    case Claim::Outcome::kFailed: {
      ChunkRecord direct;
      direct.owner = kDirectOwner;
      memo_put(key, pack(direct));
      return Located{};
    }
    case Claim::Outcome::kLoading:
      break;
  }
  return Located{};
}

Result<Cache::Located> Cache::load(const CachedFile& file, std::uint64_t index, const Key& key) {
  const ChunkGeometry geometry{file.size, config_.chunk_size};
  const std::uint64_t length = geometry.chunk_length(index);
  auto place = tiers_.allocate(length);
  if (!place.ok()) {
    (void)directory_.abandon(key);
    return Located{};
  }
  Arena* arena = tiers_.get(place->tier);
  std::span<std::byte> dst(arena->data() + place->offset, length);
  auto n = pfs_.read(file.path, index * config_.chunk_size, dst);
  if (!n.ok()) {
    (void)directory_.abandon(key);
    return n.status();
  }
  if (*n != length) {
    LARDER_LOG_LIMITED(kWarn,
                       "{} is shorter than its cached size ({} bytes): it changed during the "
                       "job; reading it from the file system",
                       file.path, file.size);
    (void)directory_.abandon(key);
    return Located{};
  }
  stats_.add(Counter::misses);
  stats_.add(Counter::cached_chunks);
  stats_.add(Counter::cached_bytes, length);
  ChunkRecord record;
  record.owner = topology_.rank;
  record.tier = place->tier;
  record.offset = place->offset;
  record.length = length;
  const Payload payload = pack(record);
  if (closing()) {
    // Finalize has begun: no MPI call. Other ranks waiting for this entry time out to the PFS.
  } else if (Status s = directory_.publish(key, payload); !s.ok()) {
    LARDER_LOG_LIMITED(kWarn, "cannot publish chunk {} of {}: {}", index, file.path, s.to_string());
  }
  memo_put(key, payload);
  return Located{Source::kCache, record, /*fresh=*/true};
}

bool Cache::copy_out(const ChunkRecord& record, std::uint64_t offset_in_chunk,
                     std::span<std::byte> into, bool count_hit) {
  if (offset_in_chunk + into.size() > record.length) return false;
  const std::uint64_t offset = record.offset + offset_in_chunk;
  const auto tier_counter = record.tier == Tier::kDisk ? Counter::hits_disk : Counter::hits_mem;
  if (record.owner == topology_.rank) {
    const Arena* arena = tiers_.get(record.tier);
    if (arena == nullptr || offset + into.size() > arena->capacity()) return false;
    std::memcpy(into.data(), arena->data() + offset, into.size());
    if (count_hit) {
      stats_.add(Counter::hits_self);
      stats_.add(tier_counter);
    }
    return true;
  }
  if (record.owner < 0 || record.owner >= topology_.size) return false;
  if (peers_ != nullptr && topology_.same_node(record.owner, topology_.rank)) {
    auto arena = peers_->get(record.owner, record.tier);
    if (arena.ok() && offset + into.size() <= (*arena)->capacity()) {
      std::memcpy(into.data(), (*arena)->data() + offset, into.size());
      if (count_hit) {
        stats_.add(Counter::hits_node);
        stats_.add(tier_counter);
      }
      return true;
    }
    if (!arena.ok()) {
      LARDER_LOG_LIMITED(kWarn, "cannot map the arena of rank {}: {}", record.owner,
                         arena.status().to_string());
    }
    return false;
  }
  if (transport_ == nullptr || closing()) return false;
  if (into.size() < record.length && remote_copies_.eligible(record.length)) {
    if (copy_from_remote_copy(record, offset_in_chunk, into)) {
      if (count_hit) {
        stats_.add(Counter::hits_remote);
        stats_.add(tier_counter);
      }
      return true;
    }
  }
  stats_.add(Counter::transport_gets);
  if (Status s = transport_->get(record.owner, record.tier, offset, into); !s.ok()) {
    stats_.add(Counter::transport_errors);
    LARDER_LOG_LIMITED(kWarn, "{} get of {} bytes from rank {} failed: {}", transport_->name(),
                       into.size(), record.owner, s.to_string());
    return false;
  }
  if (count_hit) {
    stats_.add(Counter::hits_remote);
    stats_.add(tier_counter);
  }
  stats_.add(Counter::transport_bytes, into.size());
  return true;
}

Result<std::size_t> Cache::read_direct(const CachedFile& file, std::uint64_t offset,
                                       std::span<std::byte> into) {
  return pfs_.read(file.path, offset, into);
}

}  // namespace larder

namespace larder {

bool Cache::copy_from_remote_copy(const ChunkRecord& record, std::uint64_t offset_in_chunk,
                                  std::span<std::byte> into) {
  RemoteCopies::Bytes copy = remote_copies_.find(record);
  if (copy == nullptr) {
    if (!remote_copies_.note_partial_read(record)) return false;  // first piece: get just it
    auto whole = std::make_shared<std::vector<std::byte>>(record.length);
    stats_.add(Counter::transport_gets);
    if (Status s = transport_->get(record.owner, record.tier, record.offset, *whole); !s.ok()) {
      stats_.add(Counter::transport_errors);
      LARDER_LOG_LIMITED(kWarn, "{} get of a {}-byte chunk from rank {} failed: {}",
                         transport_->name(), record.length, record.owner, s.to_string());
      return false;
    }
    stats_.add(Counter::transport_bytes, record.length);
    stats_.add(Counter::remote_copies);
    copy = whole;
    remote_copies_.put(record, copy);
  } else {
    stats_.add(Counter::remote_copy_hits);
  }
  std::memcpy(into.data(), copy->data() + offset_in_chunk, into.size());
  return true;
}

}  // namespace larder
