#include <csignal>
#include <thread>

#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "mbobserver/runtime/realtime.hpp"
#include "mbobserver/runtime/signals.hpp"

using namespace mbo::runtime;
using namespace std::chrono_literals;

namespace {

// Runs `body` in a child process (so scheduling and locked memory never leak into the test
// process) and returns its exit status, or -1 if it did not exit normally.
template <class F>
int in_child(F body) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(body());
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

TEST(Realtime, NothingRequestedNothingChanged) {
  const RealtimeResult r = apply_realtime(0, false);
  EXPECT_TRUE(r.priority_applied);
  EXPECT_TRUE(r.memory_locked);
  EXPECT_TRUE(r.warning.empty());
  EXPECT_EQ(describe_scheduling().rfind("SCHED_OTHER", 0), 0u) << describe_scheduling();
}

TEST(Realtime, WhereNotPermittedItWarnsAndCarriesOn) {
  // Take the rights away in a child: no real-time or lockable memory budget, and (if we are
  // root) no capabilities either, by becoming "nobody".
  const int code = in_child([] {
    rlimit zero{0, 0};
    ::setrlimit(RLIMIT_RTPRIO, &zero);
    ::setrlimit(RLIMIT_MEMLOCK, &zero);
    if (::getuid() == 0 && ::setuid(65534) != 0) return 10;
#ifdef MBO_SANITIZED
    // AddressSanitizer replaces mlockall() with a no-op that succeeds, so only the priority
    // half can fail here.
    constexpr bool kCanCheckLock = false;
#else
    constexpr bool kCanCheckLock = true;
#endif
    const RealtimeResult r = apply_realtime(40, kCanCheckLock);
    if (r.priority_applied || (kCanCheckLock && r.memory_locked)) return 11;
    if (r.warning.find("realtime_priority 40 not applied") == std::string::npos) return 12;
    if (kCanCheckLock && r.warning.find("lock_memory not applied") == std::string::npos) return 13;
    if (::sched_getscheduler(0) != SCHED_OTHER) return 14;
    return 0;  // and the process is still running normally
  });
  EXPECT_EQ(code, 0);
}

TEST(Realtime, WherePermittedTheThreadRunsFifo) {
  const int code = in_child([] {
    const RealtimeResult r = apply_realtime(10, false);
    if (!r.priority_applied) return 77;  // no rights here: reported as a skip below
    int policy = 0;
    sched_param p{};
    ::pthread_getschedparam(::pthread_self(), &policy, &p);
    return policy == SCHED_FIFO && p.sched_priority == 10 ? 0 : 1;
  });
  if (code == 77) GTEST_SKIP() << "SCHED_FIFO not permitted for this user (no CAP_SYS_NICE, RLIMIT_RTPRIO 0)";
  EXPECT_EQ(code, 0);
}

TEST(Realtime, WherePermittedMemoryIsLocked) {
#ifdef MBO_SANITIZED
  GTEST_SKIP() << "AddressSanitizer replaces mlockall() with a no-op";
#else
  const int code = in_child([] {
    const RealtimeResult r = apply_realtime(0, true);
    if (!r.memory_locked) return 77;
    prefault_stack();
    return describe_scheduling().find("VmLck") != std::string::npos ? 0 : 1;
  });
  if (code == 77) GTEST_SKIP() << "mlockall not permitted for this user (RLIMIT_MEMLOCK too low)";
  EXPECT_EQ(code, 0);
#endif
}

TEST(StopSignals, SigtermBecomesAStopRequestOnTheIoThread) {
  boost::asio::io_context io;
  int stopped_by = 0;
  StopSignals signals(io, [&](int signo) { stopped_by = signo; });
  EXPECT_FALSE(signals.stop_requested());
  ::raise(SIGTERM);  // without the handler this would end the test binary
  const auto give_up = std::chrono::steady_clock::now() + 60s;
  while (stopped_by == 0 && std::chrono::steady_clock::now() < give_up) io.run_one_for(100ms);
  EXPECT_EQ(stopped_by, SIGTERM);
  EXPECT_TRUE(signals.stop_requested());
  EXPECT_EQ(signals.signal(), SIGTERM);

  ::raise(SIGINT);  // a second signal while stopping: counted, no second stop
  while (signals.signals_received() < 2 && std::chrono::steady_clock::now() < give_up) io.run_one_for(100ms);
  EXPECT_EQ(signals.signals_received(), 2u);
  EXPECT_EQ(signals.signal(), SIGTERM);
}

TEST(StopSignals, RequestStopFromAnotherThreadRunsTheCallbackOnTheIoContext) {
  boost::asio::io_context io;
  std::thread::id ran_on;
  int calls = 0;
  StopSignals signals(io, [&](int) {
    ran_on = std::this_thread::get_id();
    ++calls;
  });
  std::thread other([&] {
    signals.request_stop();
    signals.request_stop();  // idempotent
  });
  other.join();
  EXPECT_TRUE(signals.stop_requested());
  EXPECT_EQ(signals.signal(), -1);
  io.run_for(100ms);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
}

TEST(StopSignals, BlockingInTheEstimatorThread) {
  bool blocked = false;
  std::thread estimator([&] {
    block_stop_signals_in_this_thread();
    sigset_t now;
    ::pthread_sigmask(SIG_BLOCK, nullptr, &now);
    blocked = sigismember(&now, SIGTERM) && sigismember(&now, SIGINT);
  });
  estimator.join();
  EXPECT_TRUE(blocked);
}
