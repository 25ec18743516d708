// The tests' counting malloc (tests/mb/alloc_counter.cpp), linked into mbobserver-bench so
// that a bench can report heap allocations per step (see alloc_counter.hpp there).
#include "../tests/mb/alloc_counter.cpp"
