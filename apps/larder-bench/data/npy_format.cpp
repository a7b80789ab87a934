#include "apps/larder-bench/data/npy_format.hpp"

namespace larder::bench {
namespace {

constexpr std::size_t kArrayAlign = 64;
constexpr std::size_t kGrowthAxisMaxDigits = 21;
constexpr std::size_t kMagicLen = 8;  // "\x93NUMPY" + major + minor

// Python's repr of a tuple of ints: "(1,)", "(64, 64, 1)", "()".
std::string tuple_repr(const std::vector<std::int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

}  // namespace

std::string npy_header(std::string_view descr, const std::vector<std::int64_t>& shape) {
  std::string dict = "{'descr': '" + std::string(descr) +
                     "', 'fortran_order': False, 'shape': " + tuple_repr(shape) + ", }";
  if (!shape.empty()) {
    const std::size_t digits = std::to_string(shape[0]).size();
    if (digits < kGrowthAxisMaxDigits) dict.append(kGrowthAxisMaxDigits - digits, ' ');
  }
  const std::size_t hlen = dict.size() + 1;  // + '\n'
  const std::size_t padlen = kArrayAlign - ((kMagicLen + 2 + hlen) % kArrayAlign);
  const std::size_t total_len = hlen + padlen;
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(total_len & 0xff);
  out += static_cast<char>((total_len >> 8) & 0xff);
  out += dict;
  out.append(padlen, ' ');
  out += '\n';
  return out;
}

}  // namespace larder::bench
