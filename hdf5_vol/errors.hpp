// Errors and messages of the connector.
//
// Failures go on the HDF5 error stack under Larder's own error class, so `h5dump
// --enable-error-stack` and H5Eprint show them next to HDF5's. The stack of a failed under-call
// is kept intact across the connector's own cleanup (ErrorStackKeeper). Messages that must reach
// the user even when nobody prints the stack (a bad HDF5_VOL_CONNECTOR, the cache not starting)
// also go to stderr, once, filtered by LARDER_LOG (off, error, warn, info, debug; default warn).
#ifndef LARDER_HDF5_VOL_ERRORS_HPP_
#define LARDER_HDF5_VOL_ERRORS_HPP_

#include <hdf5.h>

#include <cstdint>
#include <source_location>
#include <string_view>

namespace larder::vol {

// Saves the current error stack on construction and puts it back on destruction, so HDF5 API
// calls made while cleaning up (which clear the stack) do not erase the real cause.
class ErrorStackKeeper {
 public:
  ErrorStackKeeper() noexcept : saved_(H5Eget_current_stack()) {}
  ~ErrorStackKeeper() {
    if (saved_ >= 0) H5Eset_current_stack(saved_);
  }
  ErrorStackKeeper(const ErrorStackKeeper&) = delete;
  ErrorStackKeeper& operator=(const ErrorStackKeeper&) = delete;

 private:
  hid_t saved_;
};

enum class Minor : std::uint8_t {
  kBadInfo,      // the connector info string or struct
  kBadObject,    // a null or foreign object handed to a callback
  kStart,        // Larder could not be started
  kOpen,         // the read-only driver could not open a file
  kRead,         // a read through the cache failed
  kUnsupported,  // an operation the read-only driver refuses
  kInternal,     // an exception caught at a callback boundary
};

// Pushes one error of Larder's class onto the current HDF5 error stack. Never throws.
void push_error(Minor minor, std::string_view message,
                std::source_location where = std::source_location::current()) noexcept;

// Closes Larder's error class and messages (connector terminate).
void release_error_class() noexcept;

enum class LogLevel : int { kOff = 0, kError = 1, kWarn = 2, kInfo = 3, kDebug = 4 };
bool log_enabled(LogLevel level) noexcept;
// Writes "larder vol: <message>" to stderr when `level` is enabled.
void log_line(LogLevel level, std::string_view message) noexcept;

}  // namespace larder::vol

#endif  // LARDER_HDF5_VOL_ERRORS_HPP_
