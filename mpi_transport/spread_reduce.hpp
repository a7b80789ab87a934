// The load's spread over the ranks and nodes (the stats' "skew": max, its rank and node, median,
// total, log2 histograms, the largest ranks) made with reductions, not by gathering one row per
// rank: every rank holds a few numbers per metric whatever the job's size (docs/architecture.md,
// "Finalize"). The result equals spread_of() over the gathered values, exactly: the medians come
// from a bisection over the values' range (counts reduced each round, at most 64 rounds), the
// largest ranks from MPI_MAXLOC rounds that leave out those already chosen.
#ifndef LARDER_MPI_TRANSPORT_SPREAD_REDUCE_HPP_
#define LARDER_MPI_TRANSPORT_SPREAD_REDUCE_HPP_

#include <mpi.h>

#include <cstdint>
#include <span>
#include <vector>

#include "runtime/common/status.hpp"
#include "runtime/stats/stats.hpp"
#include "runtime/transport/topology.hpp"

namespace larder {

// The job's communicator (ranks as in `topology`), and this rank's machine's (the ranks that
// share memory: the topology's nodes are it or parts of it).
struct SpreadPlace {
  MPI_Comm job = MPI_COMM_NULL;
  MPI_Comm node_comm = MPI_COMM_NULL;
  const Topology* topology = nullptr;
};

// Collective over `place.job` (and `place.node_comm`): `mine[m]` is this rank's value of metric
// m; every rank passes the same number of metrics. On success every rank gets the spreads.
// Messages per rank: one reduction on the node, then about 2 + kTopRanks + 64 allreduces of a
// few words per metric, whatever the number of ranks.
Result<std::vector<Spread>> reduce_spreads(const SpreadPlace& place,
                                           std::span<const std::uint64_t> mine);

}  // namespace larder

#endif  // LARDER_MPI_TRANSPORT_SPREAD_REDUCE_HPP_
