#include "mbobserver/runtime/realtime.hpp"

#include <alloca.h>
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <spdlog/spdlog.h>

namespace mbo::runtime {

namespace {

std::string rlimit_text(int resource) {
  rlimit r{};
  if (::getrlimit(resource, &r) != 0) return "?";
  return r.rlim_cur == RLIM_INFINITY ? std::string("infinity") : std::to_string(r.rlim_cur);
}

}  // namespace

RealtimeResult apply_realtime(int priority, bool lock_memory) {
  RealtimeResult result;
  result.priority_applied = true;
  result.memory_locked = true;

  if (priority > 0) {
    sched_param param{};
    param.sched_priority = priority;
    const int err = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &param);
    if (err != 0) {
      result.priority_applied = false;
      // Unprivileged threads may use SCHED_FIFO up to RLIMIT_RTPRIO (sched(7)); otherwise
      // CAP_SYS_NICE is needed.
      result.warning += "realtime_priority " + std::to_string(priority) +
                        " not applied (pthread_setschedparam: " + std::strerror(err) +
                        "; needs CAP_SYS_NICE or RLIMIT_RTPRIO >= " + std::to_string(priority) + ", now " +
                        rlimit_text(RLIMIT_RTPRIO) + "): the estimator runs with normal scheduling. ";
    }
  }
  if (lock_memory) {
    if (::mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
      const int err = errno;
      result.memory_locked = false;
      // mlock(2): EPERM without CAP_IPC_LOCK and RLIMIT_MEMLOCK 0, ENOMEM beyond the limit.
      result.warning += std::string("lock_memory not applied (mlockall: ") + std::strerror(err) +
                        "; needs CAP_IPC_LOCK or a large enough RLIMIT_MEMLOCK, now " + rlimit_text(RLIMIT_MEMLOCK) +
                        " bytes): pages may be swapped out. ";
    }
  }
  if (!result.warning.empty()) {
    result.warning.pop_back();
    spdlog::warn("{}", result.warning);
  }
  return result;
}

void prefault_stack(std::size_t bytes) noexcept {
  // The rt-wiki "dynamic memory allocation" recipe: grow the stack once, touching each page.
  // alloca rather than recursion, which the compiler may turn into a loop in one frame.
  bytes = std::min<std::size_t>(bytes, 4u << 20);
  auto* p = static_cast<volatile unsigned char*>(::alloca(bytes));
  for (std::size_t i = 0; i < bytes; i += 4096) p[i] = 0;
}

std::string describe_scheduling() {
  int policy = 0;
  sched_param param{};
  ::pthread_getschedparam(::pthread_self(), &policy, &param);
  std::string s = policy == SCHED_FIFO ? "SCHED_FIFO " + std::to_string(param.sched_priority)
                  : policy == SCHED_RR ? "SCHED_RR " + std::to_string(param.sched_priority)
                                       : std::string("SCHED_OTHER");
  // VmLck in /proc/self/status (proc(5)): how much memory is locked now.
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmLck:", 0) == 0) s += ", " + line;
  return s;
}

}  // namespace mbo::runtime
