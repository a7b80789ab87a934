// AddressBook: every rank's UCX record (worker address, memory addresses, packed remote keys),
// held once per host in shared memory instead of once per rank.
//
// Built collectively at start-up: the ranks of a host gather their records on the host's first
// rank (MPI_Gatherv over the host's communicator: ranks-per-host records); the hosts' first
// ranks exchange their hosts' records (MPI_Allgatherv among them: every record once per host);
// the first rank writes the book into a file of the host's shared memory, every rank of the host
// maps it read-only, and the file is unlinked once all have (the mappings stay). A rank's own
// memory for the book is then its mapping's page-table share, whatever the job's size; what
// grows with the job is one copy per host (docs/architecture.md, "Start-up").
//
// The file: magic, ranks, ranks + 1 offsets (into the records area), then the records.
#ifndef LARDER_UCX_TRANSPORT_ADDRESS_BOOK_HPP_
#define LARDER_UCX_TRANSPORT_ADDRESS_BOOK_HPP_

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "runtime/common/status.hpp"

namespace larder::ucx {

// What building a book moved through MPI collectives, for this rank (counted, not estimated).
struct BookTraffic {
  std::uint64_t received = 0;  // bytes this rank received
  std::uint64_t sent = 0;      // bytes this rank sent
  int collectives = 0;         // collective calls this rank made
};

class AddressBook {
 public:
  AddressBook() = default;
  // Collective over `comm`. `dir`: a directory of this host's shared memory (the job's), where
  // the book's file is made under a new name. Every rank takes part in every collective step
  // whatever failed before it here; a failure is returned (the caller agrees on the outcome).
  static Result<AddressBook> create(MPI_Comm comm, std::span<const std::byte> mine,
                                    const std::string& dir, BookTraffic* traffic = nullptr);
  AddressBook(AddressBook&& other) noexcept;
  AddressBook& operator=(AddressBook&& other) noexcept;
  AddressBook(const AddressBook&) = delete;
  AddressBook& operator=(const AddressBook&) = delete;
  ~AddressBook();

  int ranks() const noexcept { return ranks_; }
  // Rank `rank`'s record; empty when out of range or when the book is malformed there.
  std::span<const std::byte> record(int rank) const noexcept;
  // The mapping's size (shared by the host's ranks).
  std::size_t mapped_bytes() const noexcept { return bytes_; }

 private:
  void release() noexcept;
  const std::byte* map_ = nullptr;
  std::size_t bytes_ = 0;
  int ranks_ = 0;
};

}  // namespace larder::ucx

#endif  // LARDER_UCX_TRANSPORT_ADDRESS_BOOK_HPP_
