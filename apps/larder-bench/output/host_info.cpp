#include "apps/larder-bench/output/host_info.hpp"

#include <sys/utsname.h>
#include <unistd.h>

#include <fstream>

namespace larder::bench {
namespace {

std::string trim(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  const std::size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

}  // namespace

nlohmann::ordered_json proc_file_dict(const std::string& path) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos || line.find(':', colon + 1) != std::string::npos) continue;
    const std::string key = trim(line.substr(0, colon));
    if (key.empty() || key == "processor") continue;
    out[key] = trim(line.substr(colon + 1));
  }
  return out;
}

double host_memory_gib() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0.0;
  return static_cast<double>(pages) * static_cast<double>(page) / 1024.0 / 1024.0 / 1024.0;
}

int host_cpu_count() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

std::string processor_name() {
  utsname u{};
  if (::uname(&u) != 0) return "";
  return u.machine;
}

}  // namespace larder::bench
