// The three levels every answer of the Cache goes through (cache.hpp): this rank's memo, the
// node table, the job's directory. Private to runtime/cache (included by its .cpp files only).
//
//   load(ticket)        -> Loaded       the caller claimed the entry: load it (PFS) and say what
//                                       to publish (the directory's form of the payload)
//   localize(p, tree) -> Result<Payload>  a READY payload made usable on this node (a chunk
//                                       held on another node is copied here first, from the
//                                       nearest holder of `tree`: the entry it was found in)
//   failed_as                           when not null, what a FAILED entry means, remembered like
//                                       any answer (a chunk: "read it from the PFS"), so a FAILED
//                                       entry costs each node one lookup, not one per read
#ifndef LARDER_RUNTIME_CACHE_CACHE_RESOLVE_HPP_
#define LARDER_RUNTIME_CACHE_CACHE_RESOLVE_HPP_

#include "runtime/cache/cache.hpp"
#include "runtime/common/log.hpp"

namespace larder {

template <class Load, class Localize>
Cache::Answer Cache::finish_claim(const Key& key, Result<Claim> claim, Load&& load,
                                  Localize&& localize, const Payload* failed_as,
                                  std::uint64_t tree_nodes) {
  if (!claim.ok()) {
    LARDER_LOG_LIMITED(kDebug, "directory cannot answer: {}", claim.status().to_string());
    return Answer{};
  }
  if (claim->outcome == Claim::Outcome::kLoading) {
    const std::uint64_t ticket = claim->ticket;  // this rank's place among the readers
    claim = directory_.wait(key, *claim, config_.wait_timeout);  // counted by TimedDirectory
    if (claim.ok()) claim->ticket = ticket;
    if (!claim.ok()) {
      LARDER_LOG_LIMITED(kWarn, "waiting for another rank's load failed: {}",
                         claim.status().to_string());
      return Answer{};
    }
  }
  switch (claim->outcome) {
    case Claim::Outcome::kReady: {
      auto local = localize(claim->payload, Tree{key, claim->ticket, tree_nodes});
      if (!local.ok()) return Answer{};
      memo_put(key, *local);
      Answer a{Answer::Kind::kCached, *local};
      a.copied = *local != claim->payload;
      return a;
    }
    case Claim::Outcome::kClaimed: {
      Loaded loaded = load(claim->ticket);
      if (!loaded.publish) {
        (void)directory_.abandon(key);
        return loaded.answer;
      }
      if (closing()) {
        // Finalize has begun: no MPI call. Waiters time out to the PFS.
      } else if (Status s = directory_.publish(key, loaded.answer.payload); !s.ok()) {
        LARDER_LOG_LIMITED(kWarn, "cannot publish an entry: {}", s.to_string());
      }
      return loaded_answer(key, std::move(loaded));
    }
    case Claim::Outcome::kFailed:
      if (failed_as != nullptr) {
        memo_put(key, *failed_as);
        return Answer{Answer::Kind::kCached, *failed_as};
      }
      break;
    case Claim::Outcome::kLoading:
    case Claim::Outcome::kAbsent:
      break;
  }
  return Answer{};
}

template <class Load, class Localize>
Cache::Answer Cache::resolve_at_home(const Key& key, unsigned flags, Load&& load,
                                     Localize&& localize, const Payload* failed_as) {
  count_directory_ops();
  // With node groups only the groups' representatives take tickets here: the job-wide tree
  // has one place per group.
  Answer a = finish_claim(key, directory_.acquire(key, flags), load, localize, failed_as,
                          grouped() ? groups_ : nodes_);
  a.global = true;
  return a;
}

template <class Load, class Localize>
Cache::Answer Cache::resolve_in_group(const Key& key, unsigned flags, Load&& load,
                                      Localize&& localize, const Payload* failed_as) {
  const Key gkey = group_entry(key);
  count_directory_ops();
  Result<Claim> g = directory_.acquire(gkey, kClaimIt | (flags & kTicket));
  if (!g.ok()) {
    const Retry again;
    return resolve_at_home(key, flags, load, localize, failed_as);
  }
  const std::uint64_t ticket = g->ticket;  // this node's place in the group's tree
  if (g->outcome == Claim::Outcome::kClaimed) {
    // This node represents its group: it asks the key's home, and its node's answer becomes the
    // group's (for a chunk: the root of the group's tree).
    Answer a = resolve_at_home(key, flags, load, localize, failed_as);
    if (closing()) return a;
    if (a.kind == Answer::Kind::kCached) {
      (void)directory_.publish(gkey, group_form(a.payload, (flags & kTicket) != 0, ticket));
    } else {
      (void)directory_.abandon(gkey);  // the group's nodes ask the home themselves
    }
    return a;
  }
  if (g->outcome == Claim::Outcome::kLoading) {
    g = directory_.wait(gkey, *g, config_.wait_timeout);
    if (g.ok()) g->ticket = ticket;
  }
  if (g.ok() && g->outcome == Claim::Outcome::kReady) {
    stats_.add(Counter::group_answers);
    auto local = localize(g->payload, Tree{gkey, ticket, group_nodes_});
    if (!local.ok()) return Answer{};
    memo_put(key, *local);
    Answer a{Answer::Kind::kCached, *local};
    a.copied = *local != g->payload;
    a.global = true;
    return a;
  }
  // The representative could not answer (or gave up): the key's home, as without groups.
  const Retry again;
  return resolve_at_home(key, flags, load, localize, failed_as);
}

template <class Load, class Localize>
Cache::Answer Cache::resolve_global(const Key& key, unsigned flags, Load&& load,
                                    Localize&& localize, const Payload* failed_as) {
  if (closing()) return Answer{};
  if (progress_ != nullptr) progress_->notify_activity();  // others' answers need our progress
  if (grouped()) return resolve_in_group(key, flags, load, localize, failed_as);
  return resolve_at_home(key, flags, load, localize, failed_as);
}

template <class Load>
Cache::Answer Cache::resolve_on_node(const Key& key, Load&& load) {
  // The job's only node, and this rank claimed the key in its table: every rank of the job asks
  // that table first, so no other rank can be loading it, and the directory would only echo the
  // claim (a round trip to the key's home, often another rank's progress thread, twice).
  Loaded loaded = load(0);  // the root of a fan-out tree that has no other node
  if (!loaded.publish) return loaded.answer;
  Answer a = loaded_answer(key, std::move(loaded));
  a.global = true;
  return a;
}

template <class Load, class Localize>
Cache::Answer Cache::resolve(const Key& key, unsigned flags, Load&& load, Localize&& localize,
                             const Payload* failed_as) {
  Payload payload;
  if (memo_find(key, &payload)) return Answer{Answer::Kind::kCached, payload};
  if (closing()) return Answer{};
  if (node_ != nullptr) {
    const NodeTable::Found found = node_acquire(key, config_.wait_timeout);
    switch (found.outcome) {
      case NodeTable::Found::Outcome::kReady:
        stats_.add(Counter::node_answers);
        memo_put(key, found.payload);
        return Answer{Answer::Kind::kCached, found.payload};
      case NodeTable::Found::Outcome::kClaimed: {
        const bool alone = one_node();
        Answer a = alone ? resolve_on_node(key, load)
                         : resolve_global(key, flags, load, localize, failed_as);
        end_node_claim(found.slot, a, alone ? failed_as : nullptr);
        return a;
      }
      case NodeTable::Found::Outcome::kTimeout:
        // The node's resolver has taken the whole timeout: read the PFS now rather than wait
        // as long again on the directory (where the same load is likely pending).
        return Answer{};
      case NodeTable::Found::Outcome::kFailed: {
        // The node's resolver could not answer: this rank asks again for itself.
        const Retry again;
        return resolve_global(key, flags, load, localize, failed_as);
      }
      case NodeTable::Found::Outcome::kFull:
        break;
    }
  }
  return resolve_global(key, flags, load, localize, failed_as);
}

}  // namespace larder

#endif  // LARDER_RUNTIME_CACHE_CACHE_RESOLVE_HPP_
