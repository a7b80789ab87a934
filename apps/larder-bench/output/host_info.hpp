// What DLIO's StatsCounter records about the host: /proc/cpuinfo and /proc/meminfo as
// dictionaries (lines_to_dict: "key: value" lines, the last processor's values winning),
// the memory size in GiB, the CPU count, the host and processor names.
#ifndef LARDER_APPS_LARDER_BENCH_OUTPUT_HOST_INFO_HPP_
#define LARDER_APPS_LARDER_BENCH_OUTPUT_HOST_INFO_HPP_

#include <nlohmann/json.hpp>

#include <string>

namespace larder::bench {

nlohmann::ordered_json proc_file_dict(const std::string& path);  // {} when unreadable
double host_memory_gib();
int host_cpu_count();
std::string host_name();
std::string processor_name();  // platform.processor(): uname's machine on Linux

}  // namespace larder::bench

#endif  // LARDER_APPS_LARDER_BENCH_OUTPUT_HOST_INFO_HPP_
