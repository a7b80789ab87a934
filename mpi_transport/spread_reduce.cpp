#include "mpi_transport/spread_reduce.hpp"

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>

#include "mpi_transport/comm.hpp"
#include "mpi_transport/mpi_status.hpp"

namespace larder {
namespace {

// MPI_LONG_INT's layout, for MPI_MAXLOC.
struct LongInt {
  long value;
  int index;
};

long as_long(std::uint64_t v) {
  return v > static_cast<std::uint64_t>(LONG_MAX) ? LONG_MAX : static_cast<long>(v);
}

// One order statistic being looked for: the k-th smallest (from 0) of metric `metric` over the
// ranks (`nodes` false) or over the nodes' sums, by bisection of [lo, hi].
struct Target {
  std::size_t metric = 0;
  bool nodes = false;
  std::uint64_t k = 0;
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
};

}  // namespace

Result<std::vector<Spread>> reduce_spreads(const SpreadPlace& place,
                                           std::span<const std::uint64_t> mine) {
  const Topology& topology = *place.topology;
  const std::size_t m = mine.size();
  const auto count = [](std::size_t n) { return static_cast<int>(n); };
  const auto ranks = static_cast<std::uint64_t>(topology.size);
  const auto nodes = static_cast<std::uint64_t>(topology.node_count());

  // The node's sums, on its leader. The node is the topology's (emulated nodes are parts of a
  // machine): the machine's communicator split by it, which costs the machine's ranks only.
  auto node = mpi::Comm::split(place.node_comm, topology.node(), topology.rank);
  if (!node.ok()) return node.status();
  const bool leader = node->rank() == 0;
  std::vector<std::uint64_t> node_sum(m, 0);
  Status summed = mpi::from_mpi(
      MPI_Reduce(mine.data(), node_sum.data(), count(m), MPI_UINT64_T, MPI_SUM, 0, node->get()),
      "MPI_Reduce");
  if (Status closed = node->close(); summed.ok()) summed = closed;
  if (!summed.ok()) return summed;

  // Totals and the log2 histograms of ranks and nodes, summed.
  constexpr auto kB = static_cast<std::size_t>(kSpreadBuckets);
  std::vector<std::uint64_t> sums(m + 2 * m * kB, 0);
  for (std::size_t i = 0; i < m; ++i) {
    sums[i] = mine[i];
    ++sums[m + i * kB + static_cast<std::size_t>(spread_bucket(mine[i]))];
    if (leader) ++sums[m + m * kB + i * kB + static_cast<std::size_t>(spread_bucket(node_sum[i]))];
  }
  // The range of each metric over ranks and nodes, as signed 64-bit values (MPICH compares
  // MPI_UINT64_T as signed in MPI_MAX: values at or past 2^63 are taken as 2^63 - 1, where no
  // counter of a job gets): [0, m) the ranks', [m, 2m) the nodes' (only leaders have one).
  const auto clamp = [](std::uint64_t v) {
    return static_cast<std::int64_t>(std::min<std::uint64_t>(v, INT64_MAX));
  };
  std::vector<std::int64_t> highest(2 * m, -1);
  std::vector<std::int64_t> lowest(2 * m, INT64_MAX);
  for (std::size_t i = 0; i < m; ++i) {
    highest[i] = lowest[i] = clamp(mine[i]);
    if (leader) highest[m + i] = lowest[m + i] = clamp(node_sum[i]);
  }
  if (Status s = mpi::from_mpi(MPI_Allreduce(MPI_IN_PLACE, sums.data(), count(sums.size()),
                                             MPI_UINT64_T, MPI_SUM, place.job),
                               "MPI_Allreduce");
      !s.ok()) {
    return s;
  }
  for (auto [values, op] : {std::pair{&highest, MPI_MAX}, std::pair{&lowest, MPI_MIN}}) {
    if (Status s = mpi::from_mpi(MPI_Allreduce(MPI_IN_PLACE, values->data(), count(values->size()),
                                               MPI_INT64_T, op, place.job),
                                 "MPI_Allreduce");
        !s.ok()) {
      return s;
    }
  }

  // Medians: the middle value (of an even count, the mean of the two middle ones), found by
  // bisection; every rank takes the same steps, as every rank sees the same counts.
  std::vector<Target> targets;
  for (std::size_t i = 0; i < m; ++i) {
    for (const bool over_nodes : {false, true}) {
      const std::uint64_t n = over_nodes ? nodes : ranks;
      if (n == 0) continue;
      const auto lo = static_cast<std::uint64_t>(lowest[(over_nodes ? m : 0) + i]);
      const auto hi = static_cast<std::uint64_t>(highest[(over_nodes ? m : 0) + i]);
      targets.push_back({i, over_nodes, n / 2, lo, hi});
      if (n % 2 == 0) targets.push_back({i, over_nodes, n / 2 - 1, lo, hi});
    }
  }
  // Each round counts the values at or below kPivots points of every open target's interval,
  // and keeps the part that holds its k-th value: the interval shrinks kPivots + 1 times a round,
  // so 16 rounds settle any 64-bit range (a few for the usual counters).
  constexpr std::size_t kPivots = 15;
  std::vector<std::uint64_t> below(targets.size() * kPivots);
  std::vector<std::uint64_t> pivots(targets.size() * kPivots);
  for (int round = 0; round < 64; ++round) {
    bool open = false;
    std::fill(below.begin(), below.end(), 0);
    for (std::size_t t = 0; t < targets.size(); ++t) {
      const Target& g = targets[t];
      if (g.lo >= g.hi) continue;
      open = true;
      const std::uint64_t step = (g.hi - g.lo) / (kPivots + 1) + 1;
      const bool has = !g.nodes || leader;
      const auto v =
          static_cast<std::uint64_t>(clamp(g.nodes ? node_sum[g.metric] : mine[g.metric]));
      for (std::size_t j = 0; j < kPivots; ++j) {
        // lo + step * (j + 1) - 1, never past hi (and never wrapping).
        const std::uint64_t room = g.hi - g.lo;
        const std::uint64_t offset = step * (j + 1) - 1;
        pivots[t * kPivots + j] = offset >= room || step > room ? g.hi : g.lo + offset;
        below[t * kPivots + j] = has && v <= pivots[t * kPivots + j] ? 1 : 0;
      }
    }
    if (!open) break;
    if (Status s = mpi::from_mpi(MPI_Allreduce(MPI_IN_PLACE, below.data(), count(below.size()),
                                               MPI_UINT64_T, MPI_SUM, place.job),
                                 "MPI_Allreduce");
        !s.ok()) {
      return s;
    }
    for (std::size_t t = 0; t < targets.size(); ++t) {
      Target& g = targets[t];
      if (g.lo >= g.hi) continue;
      std::uint64_t lo = g.lo;
      std::uint64_t hi = g.hi;
      for (std::size_t j = 0; j < kPivots; ++j) {
        const std::uint64_t p = pivots[t * kPivots + j];
        if (below[t * kPivots + j] >= g.k + 1) {
          hi = p;
          break;
        }
        lo = p + 1;  // the k-th value is past p (p < hi here: at hi the count is all of them)
      }
      g.lo = lo;
      g.hi = hi;
    }
  }

  std::vector<Spread> out(m);
  for (std::size_t i = 0; i < m; ++i) {
    Spread& s = out[i];
    s.total = sums[i];
    for (std::size_t b = 0; b < kB; ++b) {
      s.ranks_log2[b] = sums[m + i * kB + b];
      s.nodes_log2[b] = sums[m + m * kB + i * kB + b];
    }
    for (const bool over_nodes : {false, true}) {
      std::uint64_t upper = 0;
      std::uint64_t lower = 0;
      bool even = false;
      for (const Target& g : targets) {
        if (g.metric != i || g.nodes != over_nodes) continue;
        const std::uint64_t n = over_nodes ? nodes : ranks;
        if (g.k == n / 2) upper = g.lo;
        if (n % 2 == 0 && g.k + 1 == n / 2) {
          lower = g.lo;
          even = true;
        }
      }
      const std::uint64_t median = even ? lower + (upper - lower) / 2 : upper;
      (over_nodes ? s.node_median : s.median) = median;
    }
  }

  // The largest ranks, largest first (ties: the lower rank, as MPI_MAXLOC keeps the lower
  // index), one MPI_MAXLOC round each, those already chosen left out.
  const std::size_t top = std::min<std::size_t>(kTopRanks, ranks);
  std::vector<bool> chosen(m, false);
  std::vector<LongInt> pick(m);
  const auto maxloc = [&] {
    return mpi::from_mpi(
        MPI_Allreduce(MPI_IN_PLACE, pick.data(), count(m), MPI_LONG_INT, MPI_MAXLOC, place.job),
        "MPI_Allreduce");
  };
  for (std::size_t round = 0; round < top; ++round) {
    for (std::size_t i = 0; i < m; ++i) {
      pick[i] = {chosen[i] ? -1L : as_long(mine[i]), topology.rank};
    }
    if (Status s = maxloc(); !s.ok()) return s;
    for (std::size_t i = 0; i < m; ++i) {
      const int r = pick[i].index;
      const auto value = static_cast<std::uint64_t>(pick[i].value);
      out[i].top_ranks.push_back({r, topology.node_of(r), value});
      if (round == 0) {
        out[i].max = value;
        out[i].max_rank = r;
        out[i].max_node = topology.node_of(r);
      }
      if (r == topology.rank) chosen[i] = true;
    }
  }
  // The largest node (ties: the lower node).
  for (std::size_t i = 0; i < m; ++i) {
    pick[i] = leader ? LongInt{as_long(node_sum[i]), topology.node()} : LongInt{-1L, INT_MAX};
  }
  if (Status s = maxloc(); !s.ok()) return s;
  for (std::size_t i = 0; i < m; ++i) {
    out[i].node_max = static_cast<std::uint64_t>(pick[i].value);
    out[i].node_max_node = pick[i].index;
  }
  return out;
}

}  // namespace larder
