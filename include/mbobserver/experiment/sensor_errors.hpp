// The error models of the simulated sensors (docs/simulation.md gives each equation and where
// its parameters come from on a datasheet). Each process draws from a random stream of its
// own (`stream_seed`), so that switching one model on leaves the others' draws, and the white
// noise every scenario has had, as they were: a scenario without the new models gives the same
// bus, byte for byte, and two scenarios run with one seed share their white noise.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <Eigen/Dense>

namespace mbo::exp {

// A seed for the random stream `stream` of a run with seed `seed` (splitmix64 of both).
std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream);

// A first-order Gauss-Markov process with stationary standard deviation sigma and
// correlation time tau: x(t + dt) = phi x(t) + sigma sqrt(1 - phi^2) w, phi = exp(-dt / tau),
// w ~ N(0, 1); autocorrelation sigma^2 exp(-|lag| / tau). It starts from its stationary
// distribution, N(0, sigma^2). tau = 0 makes it white: a new N(0, sigma^2) each step.
class GaussMarkov {
 public:
  GaussMarkov() = default;
  GaussMarkov(double sigma, double tau) : sigma_(sigma), tau_(tau) {}
  // The value after `dt` seconds more (the first call draws the start).
  double step(double dt, std::mt19937_64& rng);
  double value() const { return x_; }
  double sigma() const { return sigma_; }
  double tau() const { return tau_; }

 private:
  double sigma_ = 0, tau_ = 0, x_ = 0;
  bool started_ = false;
  std::normal_distribution<double> normal_{0.0, 1.0};
};

// The peak of a first-order Gauss-Markov process's Allan deviation over its sigma, reached at
// an averaging time of 1.8926 tau (IEEE Std 952-1997, annex C: exponentially correlated
// noise): a datasheet's bias instability B (the floor of the Allan deviation) is met by
// sigma = B / kGaussMarkovAllanPeak.
inline constexpr double kGaussMarkovAllanPeak = 0.61736;
inline constexpr double kGaussMarkovAllanPeakTime = 1.8926;  // x tau

// The Allan variance of that process at averaging time T (IEEE Std 952-1997, annex C):
// (2 sigma^2 tau / T) (1 - tau / (2 T) (3 - 4 exp(-T/tau) + exp(-2 T/tau))).
double gauss_markov_allan_variance(double sigma, double tau, double T);

// Errors of one triad of inertial sensors (accelerometers or gyroscopes), per axis:
//   y = sat_range( (I + diag(scale) + M) x + bias + b(t) + noise_std n )
// M the cross-axis sensitivities (zero diagonal), b(t) a Gauss-Markov bias per axis with the
// sigma that gives the datasheet's bias instability, n ~ N(0, 1) per sample.
struct ImuTriadErrors {
  std::array<double, 3> bias{};  // turn-on bias (m/s^2 or rad/s)
  std::array<double, 3> instability{};  // bias instability: the Allan deviation's floor
  double correlation_s = 100;  // tau of the bias's Gauss-Markov process
  std::array<double, 3> scale{};  // scale-factor error (fraction: 0.01 reads 1 % high)
  std::array<double, 6> cross_axis{};  // m_xy, m_xz, m_yx, m_yz, m_zx, m_zy (fractions)
  double range = std::numeric_limits<double>::infinity();  // full scale: saturation at +-range

  // The sensed triad without the white noise and the in-run bias.
  Eigen::Vector3d apply_static(const Eigen::Vector3d& x) const;
  bool has_instability() const { return instability[0] > 0 || instability[1] > 0 || instability[2] > 0; }
};

// The in-run biases of one triad (one Gauss-Markov process per axis).
class ImuBiasDrift {
 public:
  ImuBiasDrift() = default;
  ImuBiasDrift(const ImuTriadErrors& e, std::uint64_t seed);
  // The three biases after dt more seconds.
  Eigen::Vector3d step(double dt);
  // The three biases now (zero before the first step and on an axis without instability).
  Eigen::Vector3d value() const { return {gm_[0].value(), gm_[1].value(), gm_[2].value()}; }

 private:
  std::array<GaussMarkov, 3> gm_;
  std::mt19937_64 rng_;
};

// A Hall sensor's tone wheel whose teeth are not evenly spaced: edge i of `teeth` sits at
// 2 pi (i + e_i) / teeth with e_0 = 0 and e_i ~ N(0, std) (a fraction of the pitch, clamped to
// +-0.45 so that the edges keep their order), drawn once per wheel. The count is the number of
// edges the wheel has turned past from angle 0.
class ToothWheel {
 public:
  ToothWheel() = default;
  ToothWheel(int teeth, double pitch_error_std, std::mt19937_64& rng);
  long long count(double angle) const;
  const std::vector<double>& edges() const { return edges_; }

 private:
  int teeth_ = 1;
  std::vector<double> edges_;  // angles of the edges in [0, 2 pi), ascending, edges_[0] = 0
  bool even_ = true;
};

// A GNSS receiver's accuracy class: the 1-sigma horizontal error per axis, its correlation
// time, the velocity noise and the fix quality it reports (NMEA GGA).
struct GnssClass {
  const char* name;
  double position_std, correlation_s, velocity_std;
  int fix_quality;
};
// rtk_fixed, rtk_float, dgps, sbas, single (docs/simulation.md: where the numbers come from).
const std::vector<GnssClass>& gnss_classes();

}  // namespace mbo::exp
