// A dynamic step allocates nothing once the model's Workspace exists (issue 3, "Speed"): the
// allocation functions are counted around many steps after the first (alloc_count.hpp).
#include <cstdlib>

#include <gtest/gtest.h>
#include <Eigen/Dense>

#include "alloc_count.hpp"
#include "engine_runs.hpp"

namespace mbo::peers {
using mbo::test::alloc_count_start;
using mbo::test::alloc_count_stop;
namespace {

const std::string kModels = std::string(MBO_SOURCE_DIR) + "/config/models";

// The counter itself must see allocations, or a zero below would prove nothing. The
// allocation goes through a volatile function pointer so that the compiler cannot elide it.
TEST(Allocations, CounterSeesMallocNewAndEigen) {
  void* (*volatile alloc)(std::size_t) = std::malloc;
  alloc_count_start();
  void* p = alloc(64);
  const long after_malloc = alloc_count_stop();
  std::free(p);
  EXPECT_EQ(after_malloc, 1);

  void* (*volatile op_new)(std::size_t) = ::operator new;
  alloc_count_start();
  void* q = op_new(64);
  const long after_new = alloc_count_stop();
  ::operator delete(q);
  EXPECT_EQ(after_new, 1);  // operator new reaches malloc

  volatile int n = 50;
  alloc_count_start();
  Eigen::VectorXd e(n);
  const long after_eigen = alloc_count_stop();
  e.setZero();
  EXPECT_EQ(after_eigen, 1);  // Eigen allocates with std::malloc, not operator new
}

// Steps after the first one: every step of `steps` must allocate nothing, whatever the number
// of Newton iterations it needs.
long allocations_per_step(EngineRun& r, double dt, int steps) {
  auto first = mbo::mb::step(r.model, r.s, r.ws, dt);
  EXPECT_TRUE(first.converged);
  long total = 0;
  for (int k = 0; k < steps; ++k) {
    alloc_count_start();
    auto res = mbo::mb::step(r.model, r.s, r.ws, dt);
    total += alloc_count_stop();
    EXPECT_TRUE(res.converged) << r.model.name << " step " << k;
  }
  return total;
}

TEST(Allocations, FourBarStepAllocatesNothing) {
  auto r = engine_fourbar(kModels, {});
  EXPECT_EQ(allocations_per_step(*r, 1e-3, 2000), 0);
}

TEST(Allocations, SliderCrankStepAllocatesNothing) {
  // 2 s from the dead centre: the crank passes dead centres on the way.
  auto r = engine_slider_crank(kModels, {});
  EXPECT_EQ(allocations_per_step(*r, 1e-3, 2000), 0);
}

TEST(Allocations, DoublePendulumAndTopStepsAllocateNothing) {
  auto p = engine_double_pendulum(kModels, {});
  EXPECT_EQ(allocations_per_step(*p, 1e-3, 1000), 0);
  TopSpec top;
  top.omega = {50 * std::sin(0.3), 0, 50 * std::cos(0.3)};
  auto t = engine_spinning_top(kModels, top);
  EXPECT_EQ(allocations_per_step(*t, 1e-3, 1000), 0);
}

TEST(Allocations, ChainStepAllocatesNothing) {
  for (int n : {1, 4, 16, 64}) {
    auto r = engine_chain(ChainSpec{n});
    EXPECT_EQ(allocations_per_step(*r, 1e-3, n == 64 ? 100 : 500), 0) << "n = " << n;
  }
}

}  // namespace
}  // namespace mbo::peers
