#include "runtime/path/path.hpp"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <memory>
#include <vector>

namespace larder::path {

std::string lexically_normal(std::string_view absolute) {
  std::vector<std::string_view> parts;
  std::size_t i = 0;
  while (i < absolute.size()) {
    while (i < absolute.size() && absolute[i] == '/') ++i;
    std::size_t j = i;
    while (j < absolute.size() && absolute[j] != '/') ++j;
    std::string_view part = absolute.substr(i, j - i);
    if (part.empty() || part == ".") {
      // skip
    } else if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else {
      parts.push_back(part);
    }
    i = j;
  }
  if (parts.empty()) return "/";
  std::string out;
  out.reserve(absolute.size());
  for (std::string_view part : parts) {
    out.push_back('/');
    out.append(part);
  }
  return out;
}

std::string absolute_from(std::string_view base_dir, std::string_view p) {
  if (!p.empty() && p.front() == '/') return lexically_normal(p);
  std::string joined(base_dir);
  joined.push_back('/');
  joined.append(p);
  return lexically_normal(joined);
}

std::string absolute(std::string_view p) {
  if (!p.empty() && p.front() == '/') return lexically_normal(p);
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf) == nullptr) return {};
  return absolute_from(buf, p);
}

bool is_within(std::string_view p, std::string_view prefix) noexcept {
  if (prefix == "/") return !p.empty() && p.front() == '/';
  if (p.size() < prefix.size() || p.compare(0, prefix.size(), prefix) != 0) return false;
  return p.size() == prefix.size() || p[prefix.size()] == '/';
}

std::string real_path_or_empty(const std::string& p) {
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(p.c_str(), nullptr), &std::free);
  return real ? std::string(real.get()) : std::string();
}

}  // namespace larder::path
