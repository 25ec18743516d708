// The platform's own timer jitter, as a baseline for the daemon's deadline misses: a thread
// at SCHED_FIFO 50 (if permitted) sleeping to absolute 2 ms deadlines (clock_nanosleep
// TIMER_ABSTIME, as FixedStepClock does) and busy for 130 us each period, like a step.
// Prints the wake-up lateness percentiles and how many wake-ups came more than one period
// late. Built and run by tools/load_test.sh:  g++ -O2 tools/timer_jitter.cpp && ./a.out SECONDS
// [BUSY_US (130) [LATE_FILE [CPU]]]: with LATE_FILE, the CLOCK_MONOTONIC moment (s) of each
// wake-up more than a period late is written there, one per line (run beside the daemon as a
// probe of the machine's stalls, with BUSY_US 0, one per CPU: a virtual CPU can stall alone).
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {
long ns_between(const timespec& a, const timespec& b) {
  return (b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec);
}
}  // namespace

int main(int argc, char** argv) {
  const double seconds = argc > 1 ? std::atof(argv[1]) : 60;
  constexpr long kPeriod = 2000000;
  const long busy_ns = argc > 2 ? std::atol(argv[2]) * 1000 : 130000;
  std::FILE* late_file = argc > 3 ? std::fopen(argv[3], "w") : nullptr;
  sched_param sp{};
  sp.sched_priority = 50;
  const bool fifo = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;
  if (argc > 4) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(std::atoi(argv[4]), &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
      std::fprintf(stderr, "timer_jitter: cannot run on CPU %s\n", argv[4]);
      return 2;
    }
  }
  timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  const long n = static_cast<long>(seconds * 1e9 / kPeriod);
  std::vector<long> late;
  late.reserve(n);
  long misses = 0;
  for (long k = 0; k < n; ++k) {
    next.tv_nsec += kPeriod;
    if (next.tv_nsec >= 1000000000) next.tv_nsec -= 1000000000, ++next.tv_sec;
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
    timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    const long l = ns_between(next, now);
    late.push_back(l);
    misses += l > kPeriod;
    if (l > kPeriod && late_file) std::fprintf(late_file, "%.6f\n", now.tv_sec + now.tv_nsec * 1e-9);
    for (timespec b = now; ns_between(now, b) < busy_ns;) clock_gettime(CLOCK_MONOTONIC, &b);
  }
  if (late_file) std::fclose(late_file);
  std::sort(late.begin(), late.end());
  auto pct = [&](double q) { return late[std::min(late.size() - 1, static_cast<std::size_t>(q * late.size()))] / 1e3; };
  std::printf(
      "platform timer (%s, %.0f s of 2 ms periods): wake-up lateness p50 %.1f us, p99.9 %.1f us, max %.1f us; "
      "%ld wake-ups more than 2 ms late\n",
      fifo ? "SCHED_FIFO 50" : "SCHED_OTHER", seconds, pct(0.5), pct(0.999), late.back() / 1e3, misses);
  return 0;
}
