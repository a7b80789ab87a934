#include "runtime/common/log.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace larder::log {
namespace {

std::atomic<int>& level_value() noexcept {
  static std::atomic<int> level{static_cast<int>(Level::kWarn)};  // relaxed: a filter only
  return level;
}

std::atomic<int>& rank_tag() noexcept {
  static std::atomic<int> rank{-1};  // relaxed: a tag for messages only
  return rank;
}

std::string_view level_name(Level level) noexcept {
  switch (level) {
    case Level::kError:
      return "error";
    case Level::kWarn:
      return "warn";
    case Level::kInfo:
      return "info";
    case Level::kDebug:
      return "debug";
    case Level::kTrace:
      return "trace";
    case Level::kOff:
      break;
  }
  return "off";
}

}  // namespace

std::optional<Level> parse_level(std::string_view name) noexcept {
  if (name == "off" || name == "none") return Level::kOff;
  if (name == "error") return Level::kError;
  if (name == "warn" || name == "warning") return Level::kWarn;
  if (name == "info") return Level::kInfo;
  if (name == "debug") return Level::kDebug;
  if (name == "trace") return Level::kTrace;
  return std::nullopt;
}

Level current_level() noexcept {
  return static_cast<Level>(level_value().load(std::memory_order_relaxed));
}

void set_level(Level level) noexcept {
  level_value().store(static_cast<int>(level), std::memory_order_relaxed);
}

bool enabled(Level level) noexcept {
  return level != Level::kOff && static_cast<int>(level) <= static_cast<int>(current_level());
}

void set_rank(int rank) noexcept {
  rank_tag().store(rank, std::memory_order_relaxed);
}

void write(Level level, std::string_view message) noexcept {
  char line[1024];
  const int rank = rank_tag().load(std::memory_order_relaxed);
  int n = rank >= 0
              ? std::snprintf(line, sizeof line, "larder[%d] %s: ", rank, level_name(level).data())
              : std::snprintf(line, sizeof line, "larder %s: ", level_name(level).data());
  if (n < 0) return;
  const std::size_t room = sizeof line - static_cast<std::size_t>(n) - 1;
  const std::size_t len = message.size() < room ? message.size() : room;
  std::memcpy(line + n, message.data(), len);
  line[static_cast<std::size_t>(n) + len] = '\n';
  // A raw system call: the logger must not re-enter interposed write() or stdio.
  const auto total = static_cast<std::size_t>(n) + len + 1;
  const int saved = errno;
  [[maybe_unused]] const long rc = ::syscall(SYS_write, 2, line, total);
  errno = saved;
}

void print_line(std::string_view line) noexcept {
  std::string text;
  try {
    text.assign(line);
    text.push_back('\n');
  } catch (...) {
    return;
  }
  const int saved = errno;
  [[maybe_unused]] const long rc = ::syscall(SYS_write, 2, text.data(), text.size());
  errno = saved;
}

std::string errno_text(int err) {
  char buf[128];
  return strerror_r(err, buf, sizeof buf);
}

bool should_emit(std::atomic<std::uint64_t>& counter) noexcept {
  const std::uint64_t n = counter.fetch_add(1, std::memory_order_relaxed);  // relaxed: a count
  return n < 10 || n % 1000 == 0;
}

}  // namespace larder::log
