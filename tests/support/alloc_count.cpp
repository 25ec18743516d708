#include "alloc_count.hpp"

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdlib>

#include <malloc.h>

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_count{0};

inline void seen() {
  if (g_counting.load(std::memory_order_relaxed)) g_count.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

namespace mbo::test {
void alloc_count_start() {
  g_count.store(0);
  g_counting.store(true);
}
long alloc_count_stop() {
  g_counting.store(false);
  return g_count.load();
}
}  // namespace mbo::test

#if defined(MBO_SANITIZED)
// From <sanitizer/allocator_interface.h> (compiler-rt), which GCC 12 does not install; the
// function is exported by GCC's libasan.
extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, std::size_t),
                                                         void (*free_hook)(const volatile void*));

namespace {
void on_malloc(const volatile void*, std::size_t) { seen(); }
void on_free(const volatile void*) {}
// Installed before main: every allocation of the sanitizer's allocator (malloc, new, ...)
// calls on_malloc.
[[maybe_unused]] const int g_hooks = __sanitizer_install_malloc_and_free_hooks(on_malloc, on_free);
}  // namespace

#else

// glibc's own entry points (exported for exactly this kind of interposition).
extern "C" {
void* __libc_malloc(std::size_t);
void* __libc_calloc(std::size_t, std::size_t);
void* __libc_realloc(void*, std::size_t);
void* __libc_memalign(std::size_t, std::size_t);
void* __libc_valloc(std::size_t);
void* __libc_pvalloc(std::size_t);

void* malloc(std::size_t n) noexcept {
  seen();
  return __libc_malloc(n);
}
void* calloc(std::size_t k, std::size_t n) noexcept {
  seen();
  return __libc_calloc(k, n);
}
void* realloc(void* p, std::size_t n) noexcept {
  seen();
  return __libc_realloc(p, n);
}
void* memalign(std::size_t a, std::size_t n) noexcept {
  seen();
  return __libc_memalign(a, n);
}
void* aligned_alloc(std::size_t a, std::size_t n) noexcept {
  seen();
  return __libc_memalign(a, n);
}
int posix_memalign(void** out, std::size_t a, std::size_t n) noexcept {
  if (a % sizeof(void*) != 0 || (a & (a - 1)) != 0) return EINVAL;
  seen();
  void* p = __libc_memalign(a, n);
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}
void* valloc(std::size_t n) noexcept {
  seen();
  return __libc_valloc(n);
}
void* pvalloc(std::size_t n) noexcept {
  seen();
  return __libc_pvalloc(n);
}
}
#endif
