// The content hash of the bytes the cache holds (docs/architecture.md, "Content hashes"): XXH3-64,
// never 0, since 0 means "not hashed". ContentHasher gives the same hash for bytes that arrive in
// order, a piece at a time. A transport uses it to hash piece k of a remote read while piece k+1
// is still in flight.
#ifndef LARDER_RUNTIME_COMMON_CONTENT_HASH_HPP_
#define LARDER_RUNTIME_COMMON_CONTENT_HASH_HPP_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

struct XXH3_state_s;  // xxhash.h's streaming state, kept out of this header

namespace larder {

std::uint64_t content_hash(const void* data, std::size_t length) noexcept;

class ContentHasher {
 public:
  ContentHasher() noexcept;  // without memory for its state, valid() is false
  ContentHasher(const ContentHasher&) = delete;
  ContentHasher& operator=(const ContentHasher&) = delete;
  ContentHasher(ContentHasher&&) noexcept = default;
  ContentHasher& operator=(ContentHasher&&) noexcept = default;
  ~ContentHasher();

  bool valid() const noexcept { return state_ != nullptr; }
  void update(std::span<const std::byte> bytes) noexcept;
  // content_hash() of everything given so far; 0 when !valid().
  std::uint64_t digest() const noexcept;

 private:
  struct Free {
    void operator()(XXH3_state_s* s) const noexcept;
  };
  std::unique_ptr<XXH3_state_s, Free> state_;
};

}  // namespace larder

#endif  // LARDER_RUNTIME_COMMON_CONTENT_HASH_HPP_
