// Counts heap allocations between start and stop, to prove that a dynamic step allocates
// nothing once the workspace exists.
//
// Counting operator new alone would miss Eigen, whose dynamic matrices call std::malloc
// directly. So the allocation functions of the C library are replaced in the executable
// (forwarding to glibc's __libc_* entry points); operator new reaches them through malloc.
// Under AddressSanitizer, which owns malloc, the sanitizer's allocation hook counts instead.
// Link the object library mbo_alloc_count into an executable to use it.
#pragma once

namespace mbo::test {

void alloc_count_start();  // resets the count and starts counting (all threads)
long alloc_count_stop();  // stops counting and returns the number of allocations seen

}  // namespace mbo::test
