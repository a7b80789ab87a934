#include "apps/larder-bench/output/console.hpp"

#include <fmt/format.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>

namespace larder::bench {

std::string dlio_timestamp() {
  timeval tv{};
  ::gettimeofday(&tv, nullptr);
  std::tm tm{};
  ::localtime_r(&tv.tv_sec, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:06d}", buf, static_cast<long>(tv.tv_usec));
}

Console::Console(int rank, bool progress_allowed)
    : rank_(rank), progress_enabled_(progress_allowed && rank == 0 && ::isatty(2) == 1) {}

void Console::emit(std::FILE* stream, const std::string& line) {
  clear_progress();
  fmt::print(stream, "{}\n", line);
  std::fflush(stream);
  if (log_ != nullptr) {
    if (std::fputs(line.c_str(), log_) == EOF || std::fputc('\n', log_) == EOF) log_failed_ = true;
  } else {
    history_.push_back(line);
  }
}

void Console::output(std::string_view message) {
  if (rank_ != 0) return;
  emit(stdout, fmt::format("[OUTPUT] {} {}", dlio_timestamp(), message));
}

void Console::metric(std::string_view message) {
  if (rank_ != 0) return;
  emit(stdout, fmt::format("[METRIC] {}", message));
}

void Console::warning(std::string_view message) {
  if (rank_ != 0) return;
  emit(stdout, fmt::format("[WARNING] {} {}", dlio_timestamp(), message));
}

Status Console::start_log(const std::string& path) {
  if (rank_ != 0 || log_ != nullptr) return {};
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return errno_error(errno, "cannot create " + path);
  log_ = f;
  log_path_ = path;
  for (const std::string& line : history_) {
    if (std::fputs(line.c_str(), log_) == EOF || std::fputc('\n', log_) == EOF) log_failed_ = true;
  }
  history_.clear();
  return {};
}

Status Console::finish_log() {
  if (log_ == nullptr) return {};
  const bool closed = std::fclose(log_) == 0;
  const int err = errno;
  log_ = nullptr;
  if (!closed || log_failed_) return errno_error(closed ? EIO : err, "cannot write " + log_path_);
  return {};
}

void Console::error(std::string_view message) {
  const std::string line = fmt::format("[ERROR] larder-bench rank {}: {}", rank_, message);
  if (rank_ == 0) {
    emit(stderr, line);
    return;
  }
  clear_progress();
  fmt::print(stderr, "{}\n", line);
  std::fflush(stderr);
}

void Console::progress_start(std::string label, std::int64_t total) {
  label_ = std::move(label);
  total_ = total;
  started_ = std::chrono::steady_clock::now();
  last_draw_ = {};
}

void Console::progress_update(std::int64_t done, std::string_view detail) {
  if (!progress_enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (done < total_ && now - last_draw_ < std::chrono::milliseconds(200)) return;
  last_draw_ = now;
  const double secs = std::chrono::duration<double>(now - started_).count();
  const int width = 24;
  const int filled = total_ > 0 ? static_cast<int>(width * done / total_) : 0;
  fmt::print(stderr, "\r\033[K{} [{}{}] {}/{} {:.1f}s {}", label_, std::string(filled, '#'),
             std::string(width - filled, '.'), done, total_, secs, detail);
  std::fflush(stderr);
  progress_shown_ = true;
}

void Console::progress_end() {
  clear_progress();
}

void Console::clear_progress() {
  if (!progress_shown_) return;
  fmt::print(stderr, "\r\033[K");
  std::fflush(stderr);
  progress_shown_ = false;
}

}  // namespace larder::bench
