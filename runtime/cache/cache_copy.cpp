// Node copies and fan-out (cache.hpp, fanout.hpp): a chunk held on another node is copied once
// into the arena of the rank that resolves it for its node, from the nearest holder of the
// chunk's fan-out tree; the copy is then a holder itself for the positions below it.
#include <thread>

#include "runtime/cache/cache.hpp"
#include "runtime/cache/cache_resolve.hpp"
#include "runtime/cache/fanout.hpp"
#include "runtime/common/log.hpp"

namespace larder {
Result<ChunkRecord> Cache::copy_from(const ChunkRecord& source, const ChunkRecord& into) {
  if (transport_ == nullptr || closing()) {
    return Status(Errc::kUnavailable, 0, "no transport to copy from another node");
  }
  const std::span<std::byte> dst = own_bytes(into);
  if (dst.size() != into.length || into.length == 0) {
    return Status(Errc::kInternal, EINVAL, "copy destination outside the arena");
  }
  stats_.add(Counter::transport_gets);
  Transport::Hashed arrived;
  const Transport::GetOp op{source.owner,
                            source.tier,
                            source.segment,
                            source.offset,
                            dst,
                            &arrived,
                            {source.offset, source.length, source.hash}};
  if (Status s = timed_get(op); !s.ok()) {
    // EBADMSG: the holder's own check of its copy failed (its disk tier); as a mismatch here.
    if (s.native_code() == EBADMSG) return s;
    stats_.add(Counter::transport_errors);
    LARDER_LOG_LIMITED(kWarn, "{} get of {} bytes from rank {} failed: {}", transport_->name(),
                       dst.size(), source.owner, s.to_string());
    return s;
  }
  stats_.add(Counter::transport_bytes, dst.size());
  if (load_ != nullptr) load_->fetched(source.owner, dst.size());
  // Bytes that entered this node: checked before anyone on it is served from them.
  if (!verified(dst, source.hash, source.owner, "another node's copy", &arrived)) {
    return Status(Errc::kIoError, EBADMSG, "a copy from another node does not match its hash");
  }
  return into;
}

Result<ChunkRecord> Cache::holder_source(const Tree& tree, const ChunkRecord& origin,
                                         std::uint64_t position, const Result<Claim>& parent,
                                         bool parent_bad) {
  const Retry again;  // the parent's entry was looked up with this node's claim; these are more
  bool first = true;
  for (const std::uint64_t q : fanout::ancestors(position, tree_fanout_)) {
    if (q == 0) return origin;
    if (!fanout::can_have_children(q, tree_fanout_, tree.nodes)) {
      first = false;  // a leaf holds no entry (more tickets than nodes: a node table fell back)
      continue;
    }
    const Key hkey = holder_key(tree.key, q);
    Result<Claim> r = parent;
    bool bad = parent_bad;
    if (!first) {
      // The holder's entry and its bad mark live on one home: one round trip for both.
      const Lookup lookups[2] = {{hkey, kLookOnly}, {bad_holder_key(tree.key, q), kLookOnly}};
      Result<Claim> claims[2] = {Status(Errc::kInternal, 0, ""), Status(Errc::kInternal, 0, "")};
      count_directory_ops(2);
      directory_.acquire_many(lookups, claims);
      r = std::move(claims[0]);
      bad = claims[1].ok() && claims[1]->outcome == Claim::Outcome::kReady;
    }
    first = false;
    if (bad) continue;  // its copy failed a reader's check: the next holder up
    // The parent took its ticket before this node did and claims its entry in its next round
    // trip: look again, less and less often, up to the timeout (a parent that fails gives its
    // entry up, and a FAILED entry sends the reader further up at once).
    const auto deadline = std::chrono::steady_clock::now() + config_.wait_timeout;
    auto pause = std::chrono::microseconds(50);
    while (r.ok() && r->outcome == Claim::Outcome::kAbsent &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(2000));
      count_directory_ops();
      r = directory_.acquire(hkey, kLookOnly);
    }
    if (r.ok() && r->outcome == Claim::Outcome::kLoading) {
      r = directory_.wait(hkey, *r, config_.wait_timeout);
    }
    if (r.ok() && r->outcome == Claim::Outcome::kReady) return unpack<ChunkRecord>(r->payload);
    // Failed, missing or too slow: the next holder up.
  }
  return origin;
}

void Cache::mark_bad_holder(const Key& chunk, std::uint64_t position) {
  if (position == 0 || closing()) return;
  const Key mark = bad_holder_key(chunk, position);
  count_directory_ops();
  auto claim = directory_.acquire(mark, kClaimIt);
  if (!claim.ok() || claim->outcome != Claim::Outcome::kClaimed) return;  // marked already
  count_directory_ops();
  if (directory_.publish(mark, Payload{}).ok()) stats_.add(Counter::integrity_holders_marked);
}

bool Cache::reload_chunk(const CachedFile& file, std::uint64_t index, const ChunkRecord& copy) {
  const std::span<std::byte> dst = own_bytes(copy);
  if (dst.size() != copy.length || copy.length == 0 || closing()) return false;
  auto n = pfs_.read(file.path, file.version, index * config_.chunk_size, dst);
  if (!n.ok() || *n != copy.length) return false;
  // The PFS's bytes are checked like any that enter the node: against the hash the chunk's
  // origin made when it read them. Other bytes mean the file changed since (a later version is
  // read from the PFS by its readers, as any change is).
  if (config_.verify && copy.hash != 0 && hash_of(dst) != copy.hash) {
    LARDER_LOG_LIMITED(kWarn,
                       "{} chunk {} read from the file system does not match the hash its first "
                       "reader made: the file changed during the job; reading it from the file "
                       "system",
                       file.path, index);
    return false;
  }
  stats_.add(Counter::integrity_reloaded);
  stats_.add(Counter::cached_chunks);
  stats_.add(Counter::cached_bytes, copy.length);
  return true;
}

Result<Payload> Cache::localize_chunk(const Key& chunk, const Payload& payload, const Tree& tree,
                                      const ChunkRecord* into, const CachedFile* file,
                                      std::uint64_t index) {
  const auto origin = unpack<ChunkRecord>(payload);
  if (node_ == nullptr || transport_ == nullptr || origin.owner < 0 || closing()) return payload;
  const Key& key = tree.key;
  const std::uint64_t position = fanout::position(tree.ticket, origin.position);
  const std::uint64_t parent = fanout::parent(position, tree_fanout_);
  const bool ask_parent =
      parent != 0 && fanout::can_have_children(parent, tree_fanout_, tree.nodes);
  const bool may_hold =
      position != 0 && fanout::can_have_children(position, tree_fanout_, tree.nodes);
  if (on_this_node(origin.owner)) {
    if (!kept_record_usable(origin)) {
      // A kept file of this node, evicted for room: read the PFS.
      return direct_payload(FallbackCause::kNoRoom);
    }
    // A kept copy of this node that reached it through the directory (another node published
    // it as the chunk's origin): nobody on this node checked it in this step, and reads inside
    // the node are not checked. Checked here, once per node, before the node uses it.
    if (origin.tier == Tier::kFile && (origin.segment & Segments::kKeptSegment) != 0 &&
        !verified(node_bytes(origin), origin.hash, origin.owner, "a kept store")) {
      stats_.add(Counter::integrity_refetched);
      return direct_payload(FallbackCause::kIntegrity);
    }
    // A rank of the origin's own node with a ticket (its node table could not answer): it
    // copies nothing, but a place below it may be waiting for its entry: the origin's copy.
    if (may_hold) {
      const Key hkey = holder_key(key, position);
      count_directory_ops();
      auto claim = directory_.acquire(hkey, kClaimIt);
      if (claim.ok() && claim->outcome == Claim::Outcome::kClaimed) {
        (void)directory_.publish(hkey, payload);
      }
    }
    return payload;
  }
  // Claim this node's place in the chunk's tree (when a place below it can exist) and look up
  // the parent's (when it is not the origin), in one round trip.
  // The parent's bad mark (a reader found its copy did not match) shares the parent's home.
  Lookup lookups[3];
  std::size_t n = 0;
  if (may_hold) lookups[n++] = {holder_key(key, position), kClaimIt};
  if (ask_parent) {
    lookups[n++] = {holder_key(key, parent), kLookOnly};
    lookups[n++] = {bad_holder_key(key, parent), kLookOnly};
  }
  Result<Claim> claims[3] = {Status(Errc::kInternal, 0, "no holder entry"),
                             Status(Errc::kUnavailable, 0, "the parent is the origin"),
                             Status(Errc::kUnavailable, 0, "no mark")};
  if (n > 0) {
    directory_.acquire_many(std::span(lookups, n), std::span(claims, n));
    count_directory_ops(n);
  }
  if (!may_hold && ask_parent) {
    claims[2] = std::move(claims[1]);
    claims[1] = std::move(claims[0]);
  }
  const bool parent_bad =
      ask_parent && claims[2].ok() && claims[2]->outcome == Claim::Outcome::kReady;
  const bool holder = may_hold && claims[0].ok() && claims[0]->outcome == Claim::Outcome::kClaimed;
  auto give_up = [&]() -> Result<Payload> {
    if (holder) (void)directory_.abandon(lookups[0].key);  // readers below ask further up
    return payload;  // the origin's copy, read piece by piece over the network
  };
  ChunkRecord copy;
  const ChunkRecord* target = into != nullptr && into->length == origin.length ? into : nullptr;
  if (adopt_kept(chunk, origin.version, origin.length, target, &copy)) {
    // An earlier step kept it on this node: no copy over the network.
    copy.position = position;
  } else {
    if (target != nullptr) {
      copy = *target;  // straight into the segment being filled
    } else {
      auto place = tiers_.allocate(origin.length);
      if (!place.ok()) return give_up();
      copy.tier = place->tier;
      copy.offset = place->offset;
    }
    copy.owner = topology_.rank;
    copy.length = origin.length;
    copy.position = position;
    copy.version = origin.version;
    copy.hash = origin.hash;
    auto source = holder_source(tree, origin, position, claims[1], parent_bad);
    if (!source.ok() || source->length != origin.length) source = origin;
    const Status first = copy_from(*source, copy).status();
    if (!first.ok() && first.native_code() == EBADMSG && source->owner != origin.owner) {
      mark_bad_holder(key, source->position);  // the readers below it go around it
    }
    bool reloaded = false;
    if (!first.ok()) {
      const Status again = source->owner == origin.owner ? first : copy_from(origin, copy).status();
      if (!again.ok() && again.native_code() == EBADMSG) {
        // The origin's own bytes do not match their hash: nobody on this node reads them. The
        // node takes the PFS's bytes into this copy instead, once for all its ranks (each rank
        // reading the PFS itself would multiply the PFS's load by the ranks of the node).
        stats_.add(Counter::integrity_refetched);
        reloaded = file != nullptr && reload_chunk(*file, index, copy);
        if (!reloaded) {
          if (holder) (void)directory_.abandon(lookups[0].key);
          return direct_payload(FallbackCause::kIntegrity);
        }
      } else if (!again.ok()) {
        return give_up();
      }
    }
    if (!first.ok() && first.native_code() == EBADMSG && !reloaded) {
      stats_.add(Counter::integrity_refetched);  // a bad holder: the origin's bytes instead
    }
    if (!reloaded) {
      stats_.add(Counter::node_copies);
      stats_.add(Counter::node_copy_bytes, copy.length);
    }
  }
  // A copy made straight from the chunk's origin in the job-wide tree (not a node group's tree)
  // may stand in for the origin in a later step the origin's node is not part of.
  record_placed(chunk, copy, parent == 0 && key == chunk ? KeptRecord::kStandIn : 0);
  const Payload local = pack(copy);
  if (holder && !closing()) {
    if (Status s = directory_.publish(lookups[0].key, local); !s.ok()) {
      LARDER_LOG_LIMITED(kWarn, "cannot publish a chunk copy: {}", s.to_string());
    }
  }
  return local;
}

}  // namespace larder
