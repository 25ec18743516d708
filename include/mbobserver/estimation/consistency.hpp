// Consistency diagnostics of a filter: the cumulative periodogram whiteness test of an
// innovation sequence (Sinigaglia 2016 3.3.3, eqs. (60)-(62), Appendix A.4.5) and NEES.
#pragma once

#include <vector>

#include <Eigen/Dense>

namespace mbo::est {

struct WhitenessResult {
  int samples = 0;
  double max_deviation = 0;  // max |C(k) - k/K| of the normalised cumulative periodogram
  double bound = 0;  // 95 % Kolmogorov-Smirnov band, 1.36 / sqrt(K - 1)
  bool white = false;  // max_deviation <= bound
};

// Innovations in time order (uniformly sampled). Fewer than 16 samples: not white, samples = n.
WhitenessResult whiteness_test(const std::vector<double>& innovations);

// Normalised estimation error squared e' P^-1 e.
double nees(const Eigen::VectorXd& e, const Eigen::MatrixXd& P);

// Two-sided 95 % acceptance interval of the mean NEES of `runs` x `steps` samples of a
// chi-square variable with `dof` degrees of freedom (normal approximation).
std::pair<double, double> nees_interval(int dof, long samples);

}  // namespace mbo::est
