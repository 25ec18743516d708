// Optional real-time set-up of the estimator thread: SCHED_FIFO priority (sched(7)) and
// mlockall(MCL_CURRENT | MCL_FUTURE) (mlock(2)). Where the system does not permit them the
// daemon logs one clear warning naming what is missing and runs normally: a car's computer
// must still observe without real-time rights, only with more jitter.
#pragma once

#include <cstddef>
#include <string>

namespace mbo::runtime {

struct RealtimeResult {
  bool priority_applied = false;  // true also when no priority was requested
  bool memory_locked = false;  // true also when locking was not requested
  std::string warning;  // empty when everything asked for was applied
};

// For the calling thread (call it first thing in the estimator thread). priority 0 leaves the
// scheduling alone. Never throws; failures go to `warning` and the log.
RealtimeResult apply_realtime(int priority, bool lock_memory);

// Touches `bytes` of stack so the pages exist before the first step (with MCL_FUTURE they are
// then locked; without, they at least do not fault during a step).
void prefault_stack(std::size_t bytes = 256 * 1024) noexcept;

// "SCHED_FIFO 40" / "SCHED_OTHER", and whether memory is locked, for the start-up log.
std::string describe_scheduling();

}  // namespace mbo::runtime
