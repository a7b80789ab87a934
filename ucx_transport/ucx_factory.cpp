#include "ucx_transport/ucx_factory.hpp"

#include <mpi.h>

#include "runtime/common/log.hpp"
#include "ucx_transport/fabric.hpp"

namespace larder {
namespace {

// Routes each get to the fabric for the owner's host: same host, no wake-up (cma); other hosts,
// with wake-up (the progress thread sleeps on its event fd).
class RoutedTransport final : public ClosableTransport {
 public:
  RoutedTransport(std::vector<int> host_of, int rank, std::unique_ptr<ucx::Fabric> same_host,
                  std::unique_ptr<ucx::Fabric> other_hosts)
      : host_of_(std::move(host_of)),
        rank_(rank),
        same_host_(std::move(same_host)),
        other_hosts_(std::move(other_hosts)) {}

  const char* name() const noexcept override { return "ucx"; }

  Status get(int owner, Tier tier, std::uint64_t offset, std::span<std::byte> into) override {
    ucx::Fabric* f = fabric_for(owner);
    if (f == nullptr)
      return Status(Errc::kTransport, 0, "no ucx fabric reaches rank " + std::to_string(owner));
    return f->get(owner, tier, offset, into);
  }

  std::vector<ProgressSource> progress_sources() override {
    std::vector<ProgressSource> out;
    for (ucx::Fabric* f : {same_host_.get(), other_hosts_.get()}) {
      if (f == nullptr) continue;
      for (ProgressSource& s : f->progress_sources()) out.push_back(std::move(s));
    }
    return out;
  }

  Status close() override {
    Status first;
    for (ucx::Fabric* f : {other_hosts_.get(), same_host_.get()}) {
      if (f == nullptr) continue;
      Status s = f->close();
      if (first.ok()) first = s;
    }
    return first;
  }

 private:
  ucx::Fabric* fabric_for(int owner) const noexcept {
    if (owner < 0 || static_cast<std::size_t>(owner) >= host_of_.size()) return nullptr;
    return host_of_[static_cast<std::size_t>(owner)] == host_of_[static_cast<std::size_t>(rank_)]
               ? same_host_.get()
               : other_hosts_.get();
  }

  std::vector<int> host_of_;
  int rank_;
  std::unique_ptr<ucx::Fabric> same_host_;
  std::unique_ptr<ucx::Fabric> other_hosts_;
};

// True on every rank when `ok` is true on every rank (collective).
bool all_ok(MPI_Comm comm, bool ok) {
  int mine = ok ? 1 : 0, all = 0;
  if (MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS) return false;
  return all == 1;
}

}  // namespace

Result<std::unique_ptr<ClosableTransport>> make_ucx_transport(MPI_Comm comm,
                                                              const LocalTiers& tiers,
                                                              const UcxOptions& options) {
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<int> host_of = options.host_of;
  if (host_of.size() != static_cast<std::size_t>(size))
    host_of.assign(static_cast<std::size_t>(size), 0);
  // Which fabrics the job needs is known to every rank alike (host_of is global), so the
  // collective creations below are entered by all ranks or none.
  bool any_multi_host = false;
  for (int h : host_of) any_multi_host = any_multi_host || h != host_of[0];
  std::unique_ptr<ucx::Fabric> same_host, other_hosts;
  auto same = ucx::Fabric::create(comm, tiers, options, /*wakeup=*/false);
  if (!all_ok(comm, same.ok())) {
    if (same.ok()) (void)(*same)->close();
    return same.ok() ? Status(Errc::kTransport, 0, "ucx failed to start on another rank")
                     : same.status();
  }
  same_host = std::move(*same);
  if (any_multi_host) {
    auto other = ucx::Fabric::create(comm, tiers, options, /*wakeup=*/true);
    if (!all_ok(comm, other.ok())) {
      (void)same_host->close();
      if (other.ok()) (void)(*other)->close();
      return other.ok() ? Status(Errc::kTransport, 0, "ucx failed to start on another rank")
                        : other.status();
    }
    other_hosts = std::move(*other);
  }
  return std::unique_ptr<ClosableTransport>(
      new RoutedTransport(std::move(host_of), rank, std::move(same_host), std::move(other_hosts)));
}

}  // namespace larder
