// The one logger: five levels, lowercase messages, written to stderr with one write(2).
//
// The level is warn until the Runtime sets it from its configuration (LARDER_LOG: error, warn,
// info, debug, trace, off), so LARDER_LOG is parsed in one place only. The rank tag is set by the
// runtime at init. These two atomics are the only process-wide state outside the Runtime object:
// logging has to work before the runtime exists (configuration errors) and after it is gone
// (exit handlers).
//
//   LARDER_LOG_WARN("pread of {} bytes at {} failed: {}", n, off, errno_text(err));
//   LARDER_LOG_LIMITED(kWarn, ...)   // on the read path: first 10, then every 1000th
#ifndef LARDER_RUNTIME_COMMON_LOG_HPP_
#define LARDER_RUNTIME_COMMON_LOG_HPP_

#include <fmt/format.h>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace larder::log {

enum class Level : int { kOff = 0, kError = 1, kWarn = 2, kInfo = 3, kDebug = 4, kTrace = 5 };

// Parses a level name; nullopt when the name is not one of the accepted ones.
std::optional<Level> parse_level(std::string_view name) noexcept;
Level current_level() noexcept;
void set_level(Level level) noexcept;
bool enabled(Level level) noexcept;
void set_rank(int rank) noexcept;
void write(Level level, std::string_view message) noexcept;
// Writes one line to stderr as it is (the rank-0 summary line).
void print_line(std::string_view line) noexcept;
std::string errno_text(int err);

// Rate limiter for messages on hot paths: true for the first 10 calls, then every 1000th.
bool should_emit(std::atomic<std::uint64_t>& counter) noexcept;

template <class... Args>
void emit(Level level, fmt::format_string<Args...> format, Args&&... args) noexcept {
  try {
    write(level, fmt::format(format, std::forward<Args>(args)...));
  } catch (...) {
    write(level, "log message could not be formatted");
  }
}

}  // namespace larder::log

#define LARDER_LOG_AT(level, ...)                                                 \
  do {                                                                            \
    if (::larder::log::enabled(level)) ::larder::log::emit((level), __VA_ARGS__); \
  } while (0)
#define LARDER_LOG_ERROR(...) LARDER_LOG_AT(::larder::log::Level::kError, __VA_ARGS__)
#define LARDER_LOG_WARN(...) LARDER_LOG_AT(::larder::log::Level::kWarn, __VA_ARGS__)
#define LARDER_LOG_INFO(...) LARDER_LOG_AT(::larder::log::Level::kInfo, __VA_ARGS__)
#define LARDER_LOG_DEBUG(...) LARDER_LOG_AT(::larder::log::Level::kDebug, __VA_ARGS__)
#define LARDER_LOG_TRACE(...) LARDER_LOG_AT(::larder::log::Level::kTrace, __VA_ARGS__)
#define LARDER_LOG_LIMITED(level, ...)                               \
  do {                                                               \
    static std::atomic<std::uint64_t> larder_log_counter{0};         \
    if (::larder::log::enabled(::larder::log::Level::level) &&       \
        ::larder::log::should_emit(larder_log_counter))              \
      ::larder::log::emit(::larder::log::Level::level, __VA_ARGS__); \
  } while (0)

#endif  // LARDER_RUNTIME_COMMON_LOG_HPP_
