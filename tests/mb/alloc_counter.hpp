// Counts heap allocations made by this thread while a counter is armed (global operator new
// is replaced in alloc_counter.cpp), to prove that a step allocates nothing.
#pragma once
#include <cstddef>

namespace mbo::test {
bool allocation_counter_available();
void arm_allocation_counter();
std::size_t disarm_allocation_counter();  // allocations since arm
}  // namespace mbo::test
