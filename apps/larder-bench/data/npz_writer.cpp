#include "apps/larder-bench/data/npz_writer.hpp"

#include <algorithm>
#include <vector>

#include "apps/larder-bench/data/npy_format.hpp"
#include "apps/larder-bench/data/output_file.hpp"

namespace larder::bench {
namespace {

constexpr std::size_t kChunk = 4 << 20;

template <class Sink>
Status stream_content(Sink&& sink, const ContentFn& content, std::uint64_t total) {
  std::vector<std::uint8_t> buf(static_cast<std::size_t>(std::min<std::uint64_t>(total, kChunk)));
  for (std::uint64_t off = 0; off < total;) {
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(total - off, kChunk));
    content(off, std::span(buf.data(), n));
    if (Status s = sink(std::span<const std::uint8_t>(buf.data(), n)); !s.ok()) return s;
    off += n;
  }
  return {};
}

std::span<const std::uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

}  // namespace

Status write_npz(const std::string& path, Dims dims, std::int64_t samples, const ContentFn& content,
                 ZipStyle style) {
  auto file = OutputFile::create(path);
  if (!file.ok()) return file.status();
  ZipStoredWriter zip(file.value(), style);
  const std::string x_header = npy_header("|u1", {dims.d1, dims.d2, samples});
  const auto x_bytes = static_cast<std::uint64_t>(dims.bytes() * samples);
  Status s = zip.begin_member("x.npy", x_header.size() + x_bytes);
  if (s.ok()) s = zip.write(bytes_of(x_header));
  if (s.ok()) s = stream_content([&](auto span) { return zip.write(span); }, content, x_bytes);
  if (s.ok()) s = zip.end_member();

  const std::string y_header = npy_header("<i8", {samples});
  const std::vector<std::uint8_t> zeros(static_cast<std::size_t>(8 * samples), 0);
  if (s.ok()) s = zip.begin_member("y.npy", y_header.size() + zeros.size());
  if (s.ok()) s = zip.write(bytes_of(y_header));
  if (s.ok()) s = zip.write(zeros);
  if (s.ok()) s = zip.end_member();
  if (s.ok()) s = zip.finish();
  if (s.ok()) s = file.value().close();
  return s;
}

Status write_npy(const std::string& path, Dims dims, std::int64_t samples,
                 const ContentFn& content) {
  auto file = OutputFile::create(path);
  if (!file.ok()) return file.status();
  Status s = file.value().write(npy_header("|u1", {dims.d1, dims.d2, samples}));
  if (s.ok()) {
    s = stream_content([&](auto span) { return file.value().write(span); }, content,
                       static_cast<std::uint64_t>(dims.bytes() * samples));
  }
  if (s.ok()) s = file.value().close();
  return s;
}

}  // namespace larder::bench
