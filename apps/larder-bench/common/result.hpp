// Status and Result<T> for larder-bench. The tool sees only Larder's public API, so it carries
// its own small error type: a failure is one message meant for the user, naming what was being
// done and the real cause ("cannot open data/train/img_1_of_8.npz: No such file or directory").
#ifndef LARDER_APPS_LARDER_BENCH_COMMON_RESULT_HPP_
#define LARDER_APPS_LARDER_BENCH_COMMON_RESULT_HPP_

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace larder::bench {

class [[nodiscard]] Status {
 public:
  Status() noexcept = default;  // OK
  static Status error(std::string message) {
    Status s;
    s.message_ = std::make_shared<const std::string>(std::move(message));
    return s;
  }
  bool ok() const noexcept { return message_ == nullptr; }
  const std::string& message() const noexcept {
    static const std::string kEmpty;
    return ok() ? kEmpty : *message_;
  }

 private:
  std::shared_ptr<const std::string> message_;  // null means OK
};

// "what: strerror(err)".
Status errno_error(int err, std::string_view what);

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit by design
  Result(Status error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const noexcept { return v_.index() == 0; }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  Status status() const { return ok() ? Status() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_COMMON_RESULT_HPP_
