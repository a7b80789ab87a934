// Larder's C++ API: RAII and std::span over the C API in larder.h (same core, same behaviour).
//
// Errors follow std::filesystem: each call has a throwing form (std::system_error carrying the
// errno the file system gave) and a noexcept form that fills a std::error_code.
//
//   larder::Session session(MPI_COMM_WORLD);          // collective; finalize() is explicit
//   larder::File f("/lus/data/train/img_0.npz");
//   std::vector<std::byte> buf(f.size());
//   f.read_at(buf, 0);
//   session.finalize();                               // collective
#ifndef LARDER_LARDER_HPP_
#define LARDER_LARDER_HPP_

#include <fcntl.h>
#include <larder/larder.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace larder {

// Starts Larder over a communicator (collective). finalize() is explicit and collective: a
// destructor must never run a collective, since it can run on one rank alone.
class Session {
 public:
  explicit Session(MPI_Comm comm) {
    const larder_status_t s = larder_init(comm);
    if (s != LARDER_OK)
      throw std::runtime_error(std::string("larder_init: ") + larder_last_error());
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() = default;

  void finalize() {
    if (finalized_) return;
    finalized_ = true;
    const larder_status_t s = larder_finalize();
    if (s != LARDER_OK)
      throw std::runtime_error(std::string("larder_finalize: ") + larder_last_error());
  }

  // Collective: loads the trees under `paths` into the job's cache (larder_stage).
  static larder_stage_result_t stage(const std::vector<std::string>& paths) {
    std::vector<const char*> c_paths;
    c_paths.reserve(paths.size());
    for (const std::string& p : paths) c_paths.push_back(p.c_str());
    larder_stage_result_t out{};
    if (larder_stage(c_paths.data(), c_paths.size(), &out) != LARDER_OK)
      throw std::runtime_error(std::string("larder_stage: ") + larder_last_error());
    return out;
  }

  // This rank's coming reads, in order (larder_schedule): whole files, or byte ranges.
  struct Read {
    std::string path;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;  // 0: to the end of the file
  };
  static void schedule(const std::vector<Read>& reads, bool append = false) {
    std::vector<larder_read_t> c_reads;
    c_reads.reserve(reads.size());
    for (const Read& r : reads) c_reads.push_back({r.path.c_str(), r.offset, r.length});
    if (larder_schedule(c_reads.data(), c_reads.size(), append ? LARDER_SCHEDULE_APPEND : 0u) !=
        LARDER_OK)
      throw std::runtime_error(std::string("larder_schedule: ") + larder_last_error());
  }
  // The reads have reached entry `position` of the schedule (larder_schedule_position).
  static void schedule_position(std::uint64_t position) {
    if (larder_schedule_position(position) != LARDER_OK)
      throw std::runtime_error(std::string("larder_schedule_position: ") + larder_last_error());
  }

  static larder_stats_t stats() {
    larder_stats_t out{};
    if (larder_stats_get(&out) != LARDER_OK) throw std::runtime_error(larder_last_error());
    return out;
  }

 private:
  bool finalized_ = false;
};

// A file opened read-only through Larder. Move-only; closes on destruction. Thread-safe reads.
class File {
 public:
  File() noexcept = default;
  explicit File(const std::string& path) {
    std::error_code ec;
    open(path, ec);
    if (ec) throw std::system_error(ec, "larder open " + path);
  }
  File(File&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  File& operator=(File&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() {
    if (fd_ >= 0) larder_close(fd_);
  }

  void open(const std::string& path, std::error_code& ec) noexcept {
    if (fd_ >= 0) larder_close(fd_);
    fd_ = larder_open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ec = fd_ < 0 ? std::error_code(errno, std::generic_category()) : std::error_code();
  }

  // Reads up to buf.size() bytes at `offset`; fewer only at end of file.
  std::size_t read_at(std::span<std::byte> buf, std::uint64_t offset,
                      std::error_code& ec) noexcept {
    const ssize_t n = larder_pread(fd_, buf.data(), buf.size(), static_cast<off_t>(offset));
    if (n < 0) {
      ec = std::error_code(errno, std::generic_category());
      return 0;
    }
    ec.clear();
    return static_cast<std::size_t>(n);
  }
  std::size_t read_at(std::span<std::byte> buf, std::uint64_t offset) {
    std::error_code ec;
    const std::size_t n = read_at(buf, offset, ec);
    if (ec) throw std::system_error(ec, "larder pread");
    return n;
  }

  std::uint64_t size(std::error_code& ec) const noexcept {
    struct stat st {};
    if (larder_fstat(fd_, &st) != 0) {
      ec = std::error_code(errno, std::generic_category());
      return 0;
    }
    ec.clear();
    return static_cast<std::uint64_t>(st.st_size);
  }
  std::uint64_t size() const {
    std::error_code ec;
    const std::uint64_t n = size(ec);
    if (ec) throw std::system_error(ec, "larder fstat");
    return n;
  }

  int native_handle() const noexcept { return fd_; }
  bool is_open() const noexcept { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace larder

#endif  // LARDER_LARDER_HPP_
