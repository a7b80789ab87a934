#include "hdf5_vol/errors.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <string>

#include "hdf5_vol/larder_vol.h"

namespace larder::vol {
namespace {

constexpr std::array<const char*, 7> kMinorText = {
    "bad connector info", "bad object",  "cannot start the cache",
    "cannot open file",   "read failed", "operation not supported",
    "internal error",
};

// Larder's error class and messages, registered on first use and again after HDF5 closed them.
struct ErrorClass {
  std::mutex mu;
  hid_t cls = H5I_INVALID_HID;
  hid_t major = H5I_INVALID_HID;
  std::array<hid_t, kMinorText.size()> minors{};
};

ErrorClass& error_class() {
  static auto* const ec = new ErrorClass();  // never deleted: used during HDF5 teardown
  return *ec;
}

// Registers the class if needed; false when HDF5 refuses (then HDF5's own class is used).
bool ensure_registered(ErrorClass& ec) {
  if (ec.cls >= 0 && H5Iis_valid(ec.cls) > 0) return true;
  ec.cls = H5Eregister_class("Larder", LARDER_VOL_NAME, "0.1");
  if (ec.cls < 0) return false;
  ec.major = H5Ecreate_msg(ec.cls, H5E_MAJOR, "Larder VOL connector");
  for (std::size_t i = 0; i < kMinorText.size(); ++i)
    ec.minors[i] = H5Ecreate_msg(ec.cls, H5E_MINOR, kMinorText[i]);
  return ec.major >= 0;
}

LogLevel level_from_env() noexcept {
  const char* v = std::getenv("LARDER_LOG");
  if (v == nullptr || *v == '\0') return LogLevel::kWarn;
  const std::string_view s(v);
  if (s == "off") return LogLevel::kOff;
  if (s == "error") return LogLevel::kError;
  if (s == "info") return LogLevel::kInfo;
  if (s == "debug" || s == "trace") return LogLevel::kDebug;
  return LogLevel::kWarn;
}

}  // namespace

void push_error(Minor minor, std::string_view message, std::source_location where) noexcept {
  try {
    const std::string text(message);
    ErrorClass& ec = error_class();
    std::lock_guard lock(ec.mu);
    const auto index = static_cast<std::size_t>(minor);
    bool registered = false;
    {
      ErrorStackKeeper keep;  // registering calls the API, which clears the stack
      registered = ensure_registered(ec);
    }
    if (registered && ec.minors[index] >= 0) {
      H5Epush2(H5E_DEFAULT, where.file_name(), where.function_name(), where.line(), ec.cls,
               ec.major, ec.minors[index], "%s", text.c_str());
    } else {
      H5Epush2(H5E_DEFAULT, where.file_name(), where.function_name(), where.line(), H5E_ERR_CLS,
               H5E_VOL, H5E_CANTOPERATE, "larder: %s", text.c_str());
    }
  } catch (...) {
    // Out of memory while reporting an error: the caller still returns its failure.
  }
}

void release_error_class() noexcept {
  ErrorClass& ec = error_class();
  std::lock_guard lock(ec.mu);
  if (ec.cls >= 0 && H5Iis_valid(ec.cls) > 0) {
    ErrorStackKeeper keep;
    H5Eunregister_class(ec.cls);  // closes the messages with it
  }
  ec.cls = H5I_INVALID_HID;
  ec.major = H5I_INVALID_HID;
  ec.minors.fill(H5I_INVALID_HID);
}

bool log_enabled(LogLevel level) noexcept {
  static const LogLevel current = level_from_env();
  return level != LogLevel::kOff && static_cast<int>(level) <= static_cast<int>(current);
}

void log_line(LogLevel level, std::string_view message) noexcept {
  if (!log_enabled(level)) return;
  try {
    std::string line = "larder vol: ";
    line.append(message);
    line.push_back('\n');
    const int saved = errno;
    std::size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::write(2, line.data() + done, line.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    errno = saved;
  } catch (...) {
  }
}

}  // namespace larder::vol
