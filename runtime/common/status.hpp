// Status and Result<T>: Larder's one error type (see docs/style.md).
//
// A Status is OK (no allocation) or carries an error class, the native code of the library
// that failed (errno, ucs_status_t, an MPI error class, herr_t) and a message. Statuses are
// immutable values; copying one is cheap and thread-safe.
#ifndef LARDER_RUNTIME_COMMON_STATUS_HPP_
#define LARDER_RUNTIME_COMMON_STATUS_HPP_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace larder {

enum class Errc : std::uint8_t {
  kOk,
  kNotFound,         // no such entry (the cache's own structures, not a PFS ENOENT)
  kInvalidArgument,  // bad configuration or caller input
  kIoError,          // a system call failed; native_code() is the errno
  kNoSpace,          // a budget, a shard or a file system is full
  kTimeout,          // a bounded wait ran out
  kTransport,        // UCX or the RMA data path failed
  kMpi,              // an MPI call failed; native_code() is the MPI error class
  kHdf5,             // an HDF5 call failed
  kUnavailable,      // the cache is not running or cannot serve this request
  kInternal,
};

std::string_view errc_name(Errc code) noexcept;

class [[nodiscard]] Status {
 public:
  Status() noexcept = default;
  Status(Errc code, int native, std::string message);

  bool ok() const noexcept { return rep_ == nullptr; }
  Errc code() const noexcept { return ok() ? Errc::kOk : rep_->code; }
  int native_code() const noexcept { return ok() ? 0 : rep_->native; }
  const std::string& message() const noexcept;
  std::string to_string() const;

 private:
  struct Rep {
    Errc code;
    int native;
    std::string message;
  };
  std::shared_ptr<const Rep> rep_;  // null means OK
};

// The errno of a failed system call, with what was being done.
Status from_errno(int err, std::string_view what);
Status invalid_argument(std::string message);

// Result<T>: a T or a non-OK Status. A small subset of std::expected<T, Status>.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value)
      : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Status error)
      : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  Status status() const { return ok() ? Status() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_COMMON_STATUS_HPP_
