#include "alloc_counter.hpp"

#include <cstddef>

// Interposes the C allocator of this executable: Eigen allocates with malloc directly and
// operator new ends in malloc too, so counting here sees every heap allocation of the thread.
// Under AddressSanitizer the runtime owns malloc; the counter is then not installed and the
// allocation tests skip themselves (MBO_SANITIZED).

namespace {
thread_local bool armed = false;
thread_local std::size_t count = 0;
}  // namespace

namespace mbo::test {
bool allocation_counter_available() {
#ifdef MBO_SANITIZED
  return false;
#else
  return true;
#endif
}
void arm_allocation_counter() {
  count = 0;
  armed = true;
}
std::size_t disarm_allocation_counter() {
  armed = false;
  return count;
}
}  // namespace mbo::test

#ifndef MBO_SANITIZED
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);

void* malloc(std::size_t n) {
  if (armed) ++count;
  return __libc_malloc(n);
}
void* calloc(std::size_t a, std::size_t b) {
  if (armed) ++count;
  return __libc_calloc(a, b);
}
void* realloc(void* p, std::size_t n) {
  if (armed) ++count;
  return __libc_realloc(p, n);
}
void* memalign(std::size_t al, std::size_t n) {
  if (armed) ++count;
  return __libc_memalign(al, n);
}
void* aligned_alloc(std::size_t al, std::size_t n) {
  if (armed) ++count;
  return __libc_memalign(al, n);
}
int posix_memalign(void** out, std::size_t al, std::size_t n) {
  if (armed) ++count;
  *out = __libc_memalign(al, n);
  return *out ? 0 : 12;
}
}
#endif
