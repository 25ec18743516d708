#include "mbobserver/experiment/sensor_errors.hpp"

#include <algorithm>
#include <cmath>

namespace mbo::exp {

std::uint64_t stream_seed(std::uint64_t seed, std::uint64_t stream) {
  // splitmix64 (Steele, Lea and Flood 2014) of the seed mixed with the stream number
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

double GaussMarkov::step(double dt, std::mt19937_64& rng) {
  if (!started_ || tau_ <= 0) {
    x_ = sigma_ * normal_(rng);
    started_ = true;
    return x_;
  }
  const double phi = std::exp(-dt / tau_);
  x_ = phi * x_ + sigma_ * std::sqrt(1 - phi * phi) * normal_(rng);
  return x_;
}

double gauss_markov_allan_variance(double sigma, double tau, double T) {
  const double x = T / tau;
  return 2 * sigma * sigma * tau / T * (1 - (3 - 4 * std::exp(-x) + std::exp(-2 * x)) / (2 * x));
}

Eigen::Vector3d ImuTriadErrors::apply_static(const Eigen::Vector3d& x) const {
  Eigen::Matrix3d K;
  K << 1 + scale[0], cross_axis[0], cross_axis[1],  //
      cross_axis[2], 1 + scale[1], cross_axis[3],  //
      cross_axis[4], cross_axis[5], 1 + scale[2];
  return K * x + Eigen::Vector3d(bias[0], bias[1], bias[2]);
}

ImuBiasDrift::ImuBiasDrift(const ImuTriadErrors& e, std::uint64_t seed) : rng_(seed) {
  for (int i = 0; i < 3; ++i) gm_[i] = GaussMarkov(e.instability[i] / kGaussMarkovAllanPeak, e.correlation_s);
}

Eigen::Vector3d ImuBiasDrift::step(double dt) {
  Eigen::Vector3d b;
  for (int i = 0; i < 3; ++i) b[i] = gm_[i].sigma() > 0 ? gm_[i].step(dt, rng_) : 0.0;
  return b;
}

ToothWheel::ToothWheel(int teeth, double pitch_error_std, std::mt19937_64& rng) : teeth_(teeth) {
  even_ = !(pitch_error_std > 0);
  if (even_) return;
  std::normal_distribution<double> normal(0.0, 1.0);
  edges_.resize(teeth);
  for (int i = 0; i < teeth; ++i) {
    const double e = i == 0 ? 0.0 : std::clamp(pitch_error_std * normal(rng), -0.45, 0.45);
    edges_[i] = 2 * M_PI * (i + e) / teeth;
  }
}

long long ToothWheel::count(double angle) const {
  if (even_) return static_cast<long long>(std::floor(angle * teeth_ / (2 * M_PI)));
  const double turns = std::floor(angle / (2 * M_PI));
  const double within = angle - 2 * M_PI * turns;
  // edges at or below `within`, less the one at 0: the count inside this turn
  const long long inside = std::upper_bound(edges_.begin(), edges_.end(), within) - edges_.begin() - 1;
  return static_cast<long long>(turns) * teeth_ + inside;
}

const std::vector<GnssClass>& gnss_classes() {
  // 1-sigma per horizontal axis = CEP / 1.1774 (a circular Gaussian's 50 % radius).
  //   rtk_fixed  u-blox ZED-F9P product summary: RTK 0.01 m + 1 ppm CEP (0.02 m at a 10 km
  //              baseline), velocity 0.05 m/s; the shipped scenarios' 0.02 m
  //   rtk_float  float ambiguities: decimetres
  //   dgps       code differential: 0.4 m CEP
  //   sbas       u-blox NEO-M8 product summary: SBAS 2.0 m CEP
  //   single     u-blox NEO-M8 product summary: GPS 2.5 m CEP, velocity 0.05 m/s
  // The correlation times are this project's assumptions, not datasheet figures: a fixed RTK
  // solution wanders over seconds, code solutions with the ionosphere and multipath over
  // minutes.
  static const std::vector<GnssClass> c = {
      {"rtk_fixed", 0.02, 5, 0.05, 4}, {"rtk_float", 0.2, 30, 0.05, 5}, {"dgps", 0.35, 60, 0.05, 2},
      {"sbas", 1.7, 120, 0.1, 2},      {"single", 2.1, 180, 0.1, 1},
  };
  return c;
}

}  // namespace mbo::exp
