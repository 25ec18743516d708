// A long-drive regression test: a simulated drive of tens of seconds to minutes that pins the
// figure of one estimate. Under AddressSanitizer + UndefinedBehaviorSanitizer such a drive
// costs 12-15x its release time (TheCarParkAfterAHeldSteeringAngleRunsWithoutAFailedStep:
// 29 s -> 577 s), while what the sanitizers check in it (memory and undefined behaviour in the
// step) the short drives of the same executable check in the same code. So the sanitizer build
// skips it and the release pass runs it: the sanitizer pass of scripts/test.sh stays within
// the CI's time limit.
#pragma once

#include <gtest/gtest.h>

#ifdef MBO_SANITIZED
#define MBO_LONG_DRIVE_TEST() GTEST_SKIP() << "a long drive: the release pass runs it (tests/support/long_drive.hpp)"
#else
#define MBO_LONG_DRIVE_TEST() static_cast<void>(0)
#endif
