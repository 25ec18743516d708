// Prints the vehicle model's fidelity table (fidelity.hpp) at 1, 2 and 5 ms, or at the steps
// given: mbo_fidelity [dt_s ...]. Not a test: test_fidelity.cpp asserts the figures.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "fidelity.hpp"

using namespace mbo::fidelity;

namespace {

struct Row {
  std::string name, reference;
  std::function<std::string(const Options&)> measure;
};

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

std::string lag(const RotationLag& r) {
  std::string s = fmt("max %.2f rad/s: step %.1e (expected %.1e), summed %.1e rad", r.max_rate, r.step_shortfall,
                      r.expected, r.accumulated);
  if (r.against_fine != 0) s += fmt(", vs dt/20 %+.1e rad", r.against_fine);
  return s;
}

std::vector<Row> rows() {
  return {
      {"spin angle vs rate, 80 km/h", "d(theta)/dt = theta_dot",
       [](const Options& o) {
         const auto r = spin_rate(o, 80);
         return fmt("step %.1e, 1 s %.1e", r.step_error, r.window_error);
       }},
      {"spin angle vs rate, 160 km/h", "d(theta)/dt = theta_dot",
       [](const Options& o) {
         const auto r = spin_rate(o, 160);
         return fmt("step %.1e, 1 s %.1e", r.step_error, r.window_error);
       }},
      {"free wheel, 1 s at 70.1 rad/s", "angle = w t",
       [](const Options& o) {
         const auto r = free_spin(o);
         return fmt("angle %+.1e, rate %+.1e", r.error(), r.rate_drift);
       }},
      {"cornering 20 m/s 0.1 g, shipped sedan: yaw-rate gain", "single track",
       [](const Options& o) {
         const auto c = cornering(o, 20, 0.1, true);
         return fmt("%.4f vs %.4f 1/s (%+.2f %%)", c.yaw_rate_gain, c.yaw_rate_gain_ref,
                    100 * (c.yaw_rate_gain / c.yaw_rate_gain_ref - 1));
       }},
      {"understeer gradient, shipped sedan", "m/L (lr/Cf - lf/Cr)",
       [](const Options& o) {
         const auto u = understeer(o, true);
         return fmt("%.5f vs %.5f rad/g (%+.1f %%)", u.gradient, u.reference, 100 * (u.gradient / u.reference - 1));
       }},
      {"cornering 20 m/s 0.1 g: yaw-rate gain", "single track",
       [](const Options& o) {
         const auto c = cornering(o, 20, 0.1);
         return fmt("%.4f vs %.4f 1/s (%+.2f %%)", c.yaw_rate_gain, c.yaw_rate_gain_ref,
                    100 * (c.yaw_rate_gain / c.yaw_rate_gain_ref - 1));
       }},
      {"cornering 20 m/s 0.1 g: sideslip", "single track",
       [](const Options& o) {
         const auto c = cornering(o, 20, 0.1);
         return fmt("%.4f vs %.4f deg (%+.4f deg)", c.sideslip_deg, c.sideslip_ref_deg,
                    c.sideslip_deg - c.sideslip_ref_deg);
       }},
      {"understeer gradient (0.05-0.1 g)", "m/L (lr/Cf - lf/Cr)",
       [](const Options& o) {
         const auto u = understeer(o);
         return fmt("%.5f vs %.5f rad/g (%+.1f %%)", u.gradient, u.reference, 100 * (u.gradient / u.reference - 1));
       }},
      {"coast-down from 30 m/s, 20 s", "drag + rolling, closed form",
       [](const Options& o) {
         const auto c = coast_down(o);
         return fmt("worst %.3f %%, end %.4f vs %.4f m/s", 100 * c.worst, c.speed_end, c.ref_end);
       }},
      {"longitudinal transfer (front axle)", "-M a_x h / L",
       [](const Options& o) {
         const auto l = longitudinal_transfer(o);
         return fmt("a_x %.2f: %.1f vs %.1f N (%+.1f %%)", l.accel, l.measured, l.formula,
                    100 * (l.measured / l.formula - 1)) +
                fmt("; balance %.1f N (%+.2f %%)", l.balance, 100 * (l.measured / l.balance - 1));
       }},
      {"lateral transfer (roll moment of loads)", "-M a_y h",
       [](const Options& o) {
         const auto l = lateral_transfer(o);
         return fmt("a_y %.2f: %.0f vs %.0f N m (%+.2f %%)", l.accel, l.measured, l.formula,
                    100 * (l.measured / l.formula - 1)) +
                fmt("; balance %.0f N m (%+.2f %%)", l.balance, 100 * (l.measured / l.balance - 1));
       }},
      {"undamped bounce, 2 cm, 10 s", "energy conserved",
       [](const Options& o) {
         const auto b = bounce(o);
         return fmt("|E-E0| max %.3g J of %.2f J (%.2f %%)", b.drift, b.bounce_energy, 100 * b.relative());
       }},
      {"speed from Hall counts, 80 km/h, 10 s", "truth",
       [](const Options& o) {
         const auto c = count_speed(o, 80);
         return fmt("rate %+.4f %%, speed %+.4f %% (slip %+.4f %%)", 100 * (c.rate_counts / c.rate_truth - 1),
                    100 * (c.speed_counts / c.speed_truth - 1), 100 * c.slip);
       }},
      {"speed from Hall counts, 160 km/h, 10 s", "truth",
       [](const Options& o) {
         const auto c = count_speed(o, 160);
         return fmt("rate %+.4f %%, speed %+.4f %% (slip %+.4f %%)", 100 * (c.rate_counts / c.rate_truth - 1),
                    100 * (c.speed_counts / c.speed_truth - 1), 100 * c.slip);
       }},
      {"Hall counts, ABS stop, 4 s", "floor(int w dt / tooth)",
       [](const Options& o) {
         const auto h = hall_exactness(o);
         return fmt("%.0f samples, %.0f differ, %.0f at an edge; Hall - model angle <= %.1e rad",
                    static_cast<double>(h.samples), static_cast<double>(h.mismatches), static_cast<double>(h.ambiguous),
                    h.model_angle_gap);
       }},
      {"chassis yaw, 5 m/s at full lock", "(r dt)^2/12 per step", [](const Options& o) { return lag(chassis_yaw(o)); }},
      {"steering, lane change 80 km/h", "driven: 0",
       [](const Options& o) {
         const auto r = steering(o);
         return fmt("max %.2f rad/s: step %.1e, summed %.1e rad", r.max_rate, r.step_shortfall, r.accumulated);
       }},
      {"four-bar crank (Sinigaglia 2016 scenario truth, 10 s)", "(w dt)^2/12 per step",
       [](const Options& o) { return lag(fourbar_crank(o, true)); }},
      {"slider-crank from dead centre, 10 s", "(w dt)^2/12 per step",
       [](const Options& o) { return lag(slider_crank(o, true)); }},
  };
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> steps;
  for (int i = 1; i < argc; ++i) steps.push_back(std::atof(argv[i]));
  if (steps.empty()) steps = {0.001, 0.002, 0.005};
  std::printf("| case | reference |");
  for (double dt : steps) std::printf(" dt = %g ms |", dt * 1e3);
  std::printf("\n|---|---|");
  for (std::size_t i = 0; i < steps.size(); ++i) std::printf("---|");
  std::printf("\n");
  for (const auto& r : rows()) {
    std::printf("| %s | %s |", r.name.c_str(), r.reference.c_str());
    for (double dt : steps) {
      Options o;
      o.dt = dt;
      try {
        std::printf(" %s |", r.measure(o).c_str());
      } catch (const std::exception& e) {
        std::printf(" failed: %s |", e.what());
      }
      std::fflush(stdout);
    }
    std::printf("\n");
  }
}
