/* FNV-1a over a byte range: the hash the e2e C programs print (run_mmap.py computes the same). */
#ifndef LARDER_TESTS_E2E_FNV_H_
#define LARDER_TESTS_E2E_FNV_H_

#include <stddef.h>
#include <stdint.h>

static inline uint64_t fnv(const void* p, size_t n) {
  const unsigned char* b = (const unsigned char*)p;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

#endif /* LARDER_TESTS_E2E_FNV_H_ */
