#include "runtime/common/content_hash.hpp"

#include <xxhash.h>
// On x86-64, libxxhash's dispatching entry points pick the widest vector unit the CPU has (AVX2,
// AVX-512) at run time; XXH3_64bits() itself is built for the baseline (SSE2). Same hashes, about
// 1.5-2 x the rate on this machine (AVX-512: 16-24 GB/s against 10-13 GB/s on one core). The
// header redefines XXH3_64bits and XXH3_64bits_update to the dispatching ones.
#if defined(__x86_64__) || defined(_M_X64)
#include <xxh_x86dispatch.h>
#endif

namespace larder {
namespace {

std::uint64_t nonzero(std::uint64_t h) noexcept {
  return h == 0 ? 1 : h;
}

}  // namespace

std::uint64_t content_hash(const void* data, std::size_t length) noexcept {
  return nonzero(XXH3_64bits(data, length));
}

void ContentHasher::Free::operator()(XXH3_state_s* s) const noexcept {
  (void)XXH3_freeState(s);
}

ContentHasher::ContentHasher() noexcept : state_(XXH3_createState()) {
  if (state_ && XXH3_64bits_reset(state_.get()) != XXH_OK) state_.reset();
}

ContentHasher::~ContentHasher() = default;

void ContentHasher::update(std::span<const std::byte> bytes) noexcept {
  if (state_ && XXH3_64bits_update(state_.get(), bytes.data(), bytes.size()) != XXH_OK) {
    state_.reset();  // digest() says "not hashed": the caller hashes the bytes itself
  }
}

std::uint64_t ContentHasher::digest() const noexcept {
  return state_ ? nonzero(XXH3_64bits_digest(state_.get())) : 0;
}

}  // namespace larder
