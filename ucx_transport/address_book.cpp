#include "ucx_transport/address_book.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "runtime/common/sys.hpp"
#include "runtime/common/unique_fd.hpp"

namespace larder::ucx {
namespace {

constexpr std::uint64_t kMagic = 0x4b4f4f42'52444441ull;  // "ADDRBOOK", little-endian
constexpr std::size_t kHeader = 2 * sizeof(std::uint64_t);
constexpr std::size_t kNameBytes = 1024;  // the book's file name, broadcast on the host

// A communicator this file made, freed when it goes.
class CommGuard {
 public:
  CommGuard() = default;
  CommGuard(const CommGuard&) = delete;
  CommGuard& operator=(const CommGuard&) = delete;
  ~CommGuard() {
    if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
  }
  MPI_Comm comm = MPI_COMM_NULL;
};

// Records travel between hosts as (rank, length, bytes) entries.
struct EntryHead {
  std::uint32_t rank;
  std::uint32_t length;
};

Status mpi_failed(const char* what) {
  return {Errc::kMpi, 0, std::string(what) + " failed"};
}

// The book's file contents from the entries of every host.
std::vector<std::byte> book_of(std::span<const std::byte> entries, int ranks, bool* complete) {
  std::vector<std::span<const std::byte>> records(static_cast<std::size_t>(ranks));
  std::size_t data = 0;
  std::size_t at = 0;
  while (at + sizeof(EntryHead) <= entries.size()) {
    EntryHead head{};
    std::memcpy(&head, entries.data() + at, sizeof head);
    at += sizeof head;
    if (head.rank >= static_cast<std::uint32_t>(ranks) || at + head.length > entries.size()) break;
    records[head.rank] = entries.subspan(at, head.length);
    data += head.length;
    at += head.length;
  }
  *complete = true;
  const std::size_t table = (static_cast<std::size_t>(ranks) + 1) * sizeof(std::uint64_t);
  std::vector<std::byte> book(kHeader + table + data);
  const std::uint64_t header[2] = {kMagic, static_cast<std::uint64_t>(ranks)};
  std::memcpy(book.data(), header, sizeof header);
  std::uint64_t offset = 0;
  for (int r = 0; r <= ranks; ++r) {
    std::memcpy(book.data() + kHeader + static_cast<std::size_t>(r) * sizeof offset, &offset,
                sizeof offset);
    if (r == ranks) break;
    const auto rec = records[static_cast<std::size_t>(r)];
    if (rec.empty()) *complete = false;
    std::memcpy(book.data() + kHeader + table + offset, rec.data(), rec.size());
    offset += rec.size();
  }
  return book;
}

// Writes `book` to a new file of `dir`; its name goes to `name` (kNameBytes, NUL-terminated).
Status write_book(const std::string& dir, std::span<const std::byte> book, char* name) {
  const std::string pattern = dir + "/larder-ucx-book-XXXXXX";
  if (pattern.size() >= kNameBytes) {
    return {Errc::kInvalidArgument, ENAMETOOLONG,
            "the address book's directory name is too long: " + dir};
  }
  std::memcpy(name, pattern.c_str(), pattern.size() + 1);
  UniqueFd fd(::mkostemp(name, O_CLOEXEC));
  if (!fd.valid()) {
    name[0] = '\0';
    return from_errno(errno, "cannot create the UCX address book in " + dir);
  }
  if (sys::write_full(fd.get(), book.data(), book.size()) < 0) {
    const int err = errno;
    sys::unlink(name);
    name[0] = '\0';
    return from_errno(err, "cannot write the UCX address book in " + dir);
  }
  return {};
}

}  // namespace

Result<AddressBook> AddressBook::create(MPI_Comm comm, std::span<const std::byte> mine,
                                        const std::string& dir, BookTraffic* traffic) {
  BookTraffic counted;
  int rank = 0;
  int size = 0;
  if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS || MPI_Comm_size(comm, &size) != MPI_SUCCESS) {
    return mpi_failed("MPI_Comm_rank/size");
  }
  // Every rank makes every collective call below, in the same order, whatever failed before.
  Status local;
  CommGuard host;
  CommGuard leaders;
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host.comm) !=
      MPI_SUCCESS) {
    return mpi_failed("MPI_Comm_split_type");  // every rank fails the same way here
  }
  int host_rank = 0;
  int host_size = 1;
  MPI_Comm_rank(host.comm, &host_rank);
  MPI_Comm_size(host.comm, &host_size);
  const bool first = host_rank == 0;
  if (MPI_Comm_split(comm, first ? 0 : MPI_UNDEFINED, rank, &leaders.comm) != MPI_SUCCESS) {
    local = mpi_failed("MPI_Comm_split");
  }
  ++counted.collectives;

  // 1. The host's entries on its first rank.
  std::vector<std::byte> entry(sizeof(EntryHead) + mine.size());
  const EntryHead head{static_cast<std::uint32_t>(rank), static_cast<std::uint32_t>(mine.size())};
  std::memcpy(entry.data(), &head, sizeof head);
  if (!mine.empty()) std::memcpy(entry.data() + sizeof head, mine.data(), mine.size());
  const int entry_len = static_cast<int>(entry.size());
  std::vector<int> lens(first ? static_cast<std::size_t>(host_size) : 0);
  if (MPI_Gather(&entry_len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, host.comm) != MPI_SUCCESS) {
    local = mpi_failed("MPI_Gather");
  }
  std::vector<int> displs(lens.size());
  int host_total = 0;
  for (std::size_t i = 0; i < lens.size(); ++i) {
    displs[i] = host_total;
    host_total += lens[i];
  }
  std::vector<std::byte> host_entries(static_cast<std::size_t>(host_total));
  if (MPI_Gatherv(entry.data(), entry_len, MPI_BYTE, host_entries.data(), lens.data(),
                  displs.data(), MPI_BYTE, 0, host.comm) != MPI_SUCCESS) {
    local = mpi_failed("MPI_Gatherv");
  }
  counted.collectives += 2;
  counted.sent += sizeof entry_len + entry.size();
  if (first) counted.received += lens.size() * sizeof(int) + host_entries.size();

  // 2. Every host's entries on every host's first rank.
  std::vector<std::byte> book;
  std::array<char, kNameBytes> name{};
  if (first && leaders.comm != MPI_COMM_NULL) {
    int hosts = 0;
    MPI_Comm_size(leaders.comm, &hosts);
    std::vector<int> host_lens(static_cast<std::size_t>(hosts));
    if (MPI_Allgather(&host_total, 1, MPI_INT, host_lens.data(), 1, MPI_INT, leaders.comm) !=
        MPI_SUCCESS) {
      local = mpi_failed("MPI_Allgather");
    }
    std::vector<int> host_displs(host_lens.size());
    std::size_t all_total = 0;
    for (std::size_t i = 0; i < host_lens.size(); ++i) {
      host_displs[i] = static_cast<int>(all_total);
      all_total += static_cast<std::size_t>(host_lens[i]);
    }
    std::vector<std::byte> all(all_total);
    if (MPI_Allgatherv(host_entries.data(), host_total, MPI_BYTE, all.data(), host_lens.data(),
                       host_displs.data(), MPI_BYTE, leaders.comm) != MPI_SUCCESS) {
      local = mpi_failed("MPI_Allgatherv");
    }
    counted.collectives += 2;
    counted.sent += sizeof host_total + static_cast<std::uint64_t>(host_total);
    counted.received += host_lens.size() * sizeof(int) + all_total;
    // 3. The book, written by the host's first rank.
    if (local.ok()) {
      bool complete = false;
      book = book_of(all, size, &complete);
      if (!complete) local = Status(Errc::kInternal, 0, "the UCX address book lacks a rank");
    }
    if (local.ok()) local = write_book(dir, book, name.data());
  }
  // The others map it once it is written: the first rank gives its name (empty: not written).
  if (MPI_Bcast(name.data(), static_cast<int>(name.size()), MPI_CHAR, 0, host.comm) !=
      MPI_SUCCESS) {
    local = mpi_failed("MPI_Bcast");
  }
  ++counted.collectives;
  counted.received += first ? 0 : name.size();
  name.back() = '\0';
  const bool written = name[0] != '\0';
  const std::string path(name.data());
  AddressBook out;
  if (written && local.ok()) {
    UniqueFd fd(sys::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st {};
    if (!fd.valid() || sys::fstat(fd.get(), &st) != 0) {
      local = from_errno(errno, "cannot open the UCX address book " + path);
    } else if (static_cast<std::size_t>(st.st_size) < kHeader) {
      local = Status(Errc::kInternal, 0, "the UCX address book " + path + " is truncated");
    } else {
      void* map =
          ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_SHARED, fd.get(), 0);
      if (map == MAP_FAILED) {
        local = from_errno(errno, "cannot map the UCX address book " + path);
      } else {
        out.map_ = static_cast<const std::byte*>(map);
        out.bytes_ = static_cast<std::size_t>(st.st_size);
        std::uint64_t header[2] = {};
        std::memcpy(header, out.map_, sizeof header);
        const std::size_t table = (header[1] + 1) * sizeof(std::uint64_t);
        if (header[0] != kMagic || header[1] != static_cast<std::uint64_t>(size) ||
            kHeader + table > out.bytes_) {
          local = Status(Errc::kInternal, 0, "the UCX address book " + path + " is malformed");
        } else {
          out.ranks_ = size;
        }
      }
    }
  } else if (!written && local.ok()) {
    local = Status(Errc::kTransport, 0, "this host's UCX address book could not be written");
  }
  // Every rank of the host has it mapped (or failed): the name can go.
  if (MPI_Barrier(host.comm) != MPI_SUCCESS) local = mpi_failed("MPI_Barrier");
  ++counted.collectives;
  if (first && written) sys::unlink(path.c_str());
  if (traffic != nullptr) *traffic = counted;
  if (!local.ok()) return local;
  return out;
}

AddressBook::AddressBook(AddressBook&& other) noexcept
    : map_(std::exchange(other.map_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      ranks_(std::exchange(other.ranks_, 0)) {}

AddressBook& AddressBook::operator=(AddressBook&& other) noexcept {
  if (this != &other) {
    release();
    map_ = std::exchange(other.map_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    ranks_ = std::exchange(other.ranks_, 0);
  }
  return *this;
}

AddressBook::~AddressBook() {
  release();
}

void AddressBook::release() noexcept {
  if (map_ != nullptr) ::munmap(const_cast<std::byte*>(map_), bytes_);
  map_ = nullptr;
  bytes_ = 0;
  ranks_ = 0;
}

std::span<const std::byte> AddressBook::record(int rank) const noexcept {
  if (map_ == nullptr || rank < 0 || rank >= ranks_) return {};
  const std::size_t table = (static_cast<std::size_t>(ranks_) + 1) * sizeof(std::uint64_t);
  std::uint64_t from = 0;
  std::uint64_t to = 0;
  std::memcpy(&from, map_ + kHeader + static_cast<std::size_t>(rank) * sizeof from, sizeof from);
  std::memcpy(&to, map_ + kHeader + static_cast<std::size_t>(rank + 1) * sizeof to, sizeof to);
  const std::size_t data = kHeader + table;
  if (from > to || data + to > bytes_) return {};
  return {map_ + data + from, static_cast<std::size_t>(to - from)};
}

}  // namespace larder::ucx
