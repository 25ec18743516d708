#include "mbobserver/estimation/consistency.hpp"

#include <algorithm>
#include <cmath>
#include <complex>

#include <unsupported/Eigen/FFT>

namespace mbo::est {

namespace {

std::size_t largest_prime_factor(std::size_t n) {
  std::size_t p = 1;
  for (std::size_t f = 2; f * f <= n; ++f)
    while (n % f == 0) p = f, n /= f;
  return n > 1 ? std::max(p, n) : p;
}

}  // namespace

WhitenessResult whiteness_test(const std::vector<double>& innovations) {
  WhitenessResult r;
  std::size_t N = innovations.size() & ~std::size_t(1);  // even length, as in A.4.5
  // Eigen's FFT (kissfft) costs about N times N's largest prime factor: a length with a large
  // one (a 300 s drive's 600 000 Hall innovations with a prime factor of 146 977: 9e10
  // operations) is shortened by its newest few samples to one without.
  while (N >= 16 && static_cast<double>(N) * static_cast<double>(largest_prime_factor(N)) > 4e8) N -= 2;
  r.samples = static_cast<int>(N);
  if (N < 16) return r;
  std::vector<double> x(innovations.begin(), innovations.begin() + N);
  double mean = 0;
  for (double v : x) mean += v;
  mean /= N;
  for (double& v : x) v -= mean;
  Eigen::FFT<double> fft;
  std::vector<std::complex<double>> X;
  fft.fwd(X, x);
  // Periodogram at the K = N/2 positive frequencies (eq. (61)), cumulated (eq. (62)) and
  // normalised by its total: for white noise it is the straight line k / K.
  const std::size_t K = N / 2;
  std::vector<double> S(K + 1, 0.0);
  double total = 0;
  for (std::size_t k = 1; k <= K; ++k) {
    S[k] = std::norm(X[k]) / N;
    total += S[k];
  }
  double cum = 0;
  for (std::size_t k = 1; k <= K; ++k) {
    cum += S[k];
    double c = total > 0 ? cum / total : 0;
    r.max_deviation = std::max(r.max_deviation, std::abs(c - double(k) / K));
  }
  r.bound = 1.36 / std::sqrt(double(K) - 1);
  r.white = r.max_deviation <= r.bound;
  return r;
}

double nees(const Eigen::VectorXd& e, const Eigen::MatrixXd& P) { return e.dot(P.ldlt().solve(e)); }

std::pair<double, double> nees_interval(int dof, long samples) {
  // mean of `samples` chi2(dof) variables: mean dof, variance 2 dof / samples
  double sd = std::sqrt(2.0 * dof / std::max(1L, samples));
  return {dof - 1.96 * sd, dof + 1.96 * sd};
}

}  // namespace mbo::est
