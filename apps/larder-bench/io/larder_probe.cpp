#include "apps/larder-bench/io/larder_probe.hpp"

#include <larder/larder.h>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace larder::bench {
namespace {

std::uint64_t at_path(const nlohmann::json& j, std::string_view path) {
  const nlohmann::json* node = &j;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    const std::string part(path.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (!node->is_object() || !node->contains(part)) return 0;  // older runtimes lack a key
    node = &(*node)[part];
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return node->is_number_unsigned() ? node->get<std::uint64_t>() : 0;
}

}  // namespace

std::optional<LarderCounters> read_larder_counters() {
  if (larder_initialized() == 0) return std::nullopt;
  std::vector<char> buf(8192);
  std::size_t needed = 0;
  if (larder_stats_json(buf.data(), buf.size(), &needed) != LARDER_OK) return std::nullopt;
  if (needed > buf.size()) {
    buf.resize(needed);
    if (larder_stats_json(buf.data(), buf.size(), &needed) != LARDER_OK) return std::nullopt;
  }
  const nlohmann::json j = nlohmann::json::parse(buf.data(), nullptr, false);
  if (j.is_discarded()) return std::nullopt;
  LarderCounters out{};
  for (std::size_t i = 0; i < kLarderCounterPaths.size(); ++i) {
    out[i] = at_path(j, kLarderCounterPaths[i]);
  }
  return out;
}

LarderCounters counters_delta(const LarderCounters& a, const LarderCounters& b) {
  LarderCounters d{};
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = b[i] >= a[i] ? b[i] - a[i] : 0;
  return d;
}

}  // namespace larder::bench
