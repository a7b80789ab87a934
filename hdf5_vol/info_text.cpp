#include "hdf5_vol/info_text.hpp"

#include <array>
#include <charconv>
#include <utility>
#include <vector>

namespace larder::vol {
namespace {

constexpr std::string_view kExample = "under_vol=0;under_info={}";
constexpr std::string_view kKeys = "under_vol, under_info, start, cache";

constexpr std::array<std::pair<std::string_view, larder_vol_start_t>, 4> kStarts = {{
    {"auto", LARDER_VOL_START_AUTO},
    {"world", LARDER_VOL_START_WORLD},
    {"local", LARDER_VOL_START_LOCAL},
    {"never", LARDER_VOL_START_NEVER},
}};

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

// Splits at ';' outside braces; false (with `error`) when braces do not balance.
bool split_items(std::string_view text, std::vector<std::string_view>& items, std::string& error) {
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{') {
      ++depth;
    } else if (c == '}') {
      if (--depth < 0) {
        error = "a '}' at offset " + std::to_string(i) + " closes nothing";
        return false;
      }
    } else if (c == ';' && depth == 0) {
      items.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) {
    error = "a '{' is never closed";
    return false;
  }
  items.push_back(text.substr(start));
  return true;
}

bool valid_name(std::string_view name) {
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return !name.empty();
}

// One key=value item into `out`; an error message, or empty on success.
std::string apply_item(std::string_view key, std::string_view value, InfoText& out) {
  if (key == "under_vol") {
    const bool digits = value.find_first_not_of("0123456789") == std::string_view::npos;
    if (value.empty() || (digits && !connector_value(value)) || (!digits && !valid_name(value)))
      return "under_vol='" + std::string(value) +
             "' is not a connector value (0-65535) or a connector name";
    out.under_vol = std::string(value);
    return {};
  }
  if (key == "under_info") {
    // The braces must enclose the whole value: "{a}{b}" closes before the end.
    int depth = 0;
    bool closed_early = false;
    for (std::size_t i = 0; i < value.size(); ++i) {
      if (value[i] == '{') ++depth;
      if (value[i] == '}' && --depth == 0 && i + 1 != value.size()) closed_early = true;
    }
    if (value.size() < 2 || value.front() != '{' || value.back() != '}' || closed_early)
      return "under_info must be one brace-enclosed string, e.g. under_info={}";
    out.under_info = std::string(value.substr(1, value.size() - 2));
    return {};
  }
  if (key == "start") {
    for (const auto& [name, mode] : kStarts) {
      if (value == name) {
        out.start = mode;
        return {};
      }
    }
    return "start='" + std::string(value) + "' is not one of auto, world, local, never";
  }
  if (key == "cache") {
    if (value == "on" || value == "1" || value == "yes" || value == "true") {
      out.cache = true;
    } else if (value == "off" || value == "0" || value == "no" || value == "false") {
      out.cache = false;
    } else {
      return "cache='" + std::string(value) + "' is not on or off";
    }
    return {};
  }
  return "unknown key '" + std::string(key) + "' (accepted: " + std::string(kKeys) + ")";
}

}  // namespace

std::optional<int> connector_value(std::string_view under_vol) {
  unsigned value = 0;
  const char* end = under_vol.data() + under_vol.size();
  auto [ptr, ec] = std::from_chars(under_vol.data(), end, value);
  if (ec != std::errc() || ptr != end || value > 65535) return std::nullopt;
  return static_cast<int>(value);
}

std::string_view start_name(larder_vol_start_t start) {
  for (const auto& [name, mode] : kStarts) {
    if (mode == start) return name;
  }
  return "auto";
}

ParsedInfo parse_info_text(std::string_view text) {
  ParsedInfo result;
  auto fail = [&](const std::string& why) {
    result.error = "bad larder connector info '" + std::string(text) + "': " + why +
                   " (expected for example \"" + std::string(kExample) + "\")";
    return result;
  };
  std::vector<std::string_view> items;
  std::string error;
  if (!split_items(trim(text), items, error)) return fail(error);
  InfoText info;
  std::vector<std::string_view> seen;
  for (std::string_view raw : items) {
    const std::string_view item = trim(raw);
    if (item.empty()) continue;  // "a=1;" or an empty string
    const auto eq = item.find('=');
    if (eq == std::string_view::npos) return fail("'" + std::string(item) + "' is not key=value");
    const std::string_view key = trim(item.substr(0, eq));
    for (std::string_view k : seen) {
      if (k == key) return fail("'" + std::string(key) + "' is given twice");
    }
    seen.push_back(key);
    if (std::string why = apply_item(key, trim(item.substr(eq + 1)), info); !why.empty())
      return fail(why);
  }
  result.info = std::move(info);
  return result;
}

std::string format_info_text(const InfoText& info) {
  std::string out;
  if (info.start != LARDER_VOL_START_AUTO)
    out += "start=" + std::string(start_name(info.start)) + ";";
  if (!info.cache) out += "cache=off;";
  out += "under_vol=" + info.under_vol + ";under_info={" + info.under_info + "}";
  return out;
}

}  // namespace larder::vol
