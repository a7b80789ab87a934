#include "runtime/common/status.hpp"

#include <cstring>

namespace larder {

std::string_view errc_name(Errc code) noexcept {
  switch (code) {
    case Errc::kOk:
      return "ok";
    case Errc::kNotFound:
      return "not found";
    case Errc::kInvalidArgument:
      return "invalid argument";
    case Errc::kIoError:
      return "i/o error";
    case Errc::kNoSpace:
      return "no space";
    case Errc::kTimeout:
      return "timeout";
    case Errc::kTransport:
      return "transport error";
    case Errc::kMpi:
      return "mpi error";
    case Errc::kHdf5:
      return "hdf5 error";
    case Errc::kUnavailable:
      return "unavailable";
    case Errc::kInternal:
      return "internal error";
  }
  return "unknown";
}

Status::Status(Errc code, int native, std::string message)
    : rep_(code == Errc::kOk ? nullptr
                             : std::make_shared<const Rep>(Rep{code, native, std::move(message)})) {
}

const std::string& Status::message() const noexcept {
  static const std::string empty;
  return ok() ? empty : rep_->message;
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return std::string(errc_name(rep_->code)) + ": " + rep_->message;
}

Status from_errno(int err, std::string_view what) {
  if (err == 0) return {};
  const Errc code =
      (err == ENOSPC || err == EDQUOT || err == ENOMEM) ? Errc::kNoSpace : Errc::kIoError;
  char buf[128];
  const char* text = strerror_r(err, buf, sizeof buf);  // GNU variant returns the text
  return {code, err, std::string(what) + ": " + text};
}

Status invalid_argument(std::string message) {
  return {Errc::kInvalidArgument, EINVAL, std::move(message)};
}

}  // namespace larder
