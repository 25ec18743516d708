// An independent peer for the multibody engine: the same mechanisms simulated with Simbody
// 3.7 (Debian's libsimbody-dev), which uses relative (joint) coordinates, a recursive O(n)
// forward dynamics and explicit Runge-Kutta integration: nothing in common with our natural
// coordinates and implicit trapezoidal rule except the mechanics.
//
// Simbody's headers do not compile as C++20 (docs/dependencies.md), so the peer is
// built as C++17 and this header exposes no Simbody type.
#pragma once

#include <memory>
#include <vector>

#include "mechanisms.hpp"

namespace mbo::peers {

struct SimbodyOptions {
  // > 0: RK-Merson with this fixed step (what the bench times); 0: error-controlled RK-Merson
  // at `accuracy` (infinity norm), the reference for the trajectory comparisons.
  double fixed_step = 0;
  double accuracy = 1e-12;
  double constraint_tolerance = 1e-12;  // closed loops (four-bar, slider-crank)
};

class SimbodyPeer {
 public:
  // Tracked values, ground-frame 3-D vectors stacked in this order:
  //   double pendulum, four-bar, slider-crank: P1, P2
  //   spinning top: u, v, w (the body axes)
  //   chain: P_1 .. P_n (the far joint points)
  static std::unique_ptr<SimbodyPeer> double_pendulum(const DoublePendulumSpec& spec, const SimbodyOptions& opt = {});
  static std::unique_ptr<SimbodyPeer> spinning_top(const TopSpec& spec, const SimbodyOptions& opt = {});
  static std::unique_ptr<SimbodyPeer> fourbar(const FourBarSpec& spec, const SimbodyOptions& opt = {});
  static std::unique_ptr<SimbodyPeer> slider_crank(const SliderCrankSpec& spec, const SimbodyOptions& opt = {});
  static std::unique_ptr<SimbodyPeer> chain(const ChainSpec& spec, const SimbodyOptions& opt = {});

  ~SimbodyPeer();
  SimbodyPeer(const SimbodyPeer&) = delete;
  SimbodyPeer& operator=(const SimbodyPeer&) = delete;

  double time() const;
  // Integrates up to exactly t (the integrator is stopped there, the state is never an
  // interpolated one).
  void advance_to(double t);
  // One call of the integrator over dt: with a fixed step, exactly one Runge-Kutta step.
  void step(double dt);
  // One evaluation of the forward dynamics (accelerations and multipliers) at the current
  // state, without the integrator: the work of one Runge-Kutta stage.
  void evaluate_dynamics();

  int tracked_count() const;  // number of 3-D vectors
  std::vector<double> tracked() const;
  double energy() const;  // kinetic + gravitational potential (zero at the origin)
  double constraint_error() const;  // infinity norm of the position constraint errors
  long steps_taken() const;  // integrator steps since the start
  int coordinates() const;  // Simbody's q size (quaternions for spherical joints)

 private:
  struct Impl;
  explicit SimbodyPeer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Position of P2 of the four-bar closed with the crank at spec.theta: the intersection of
// the circles about P1 (radius l2) and B (radius l3) with the larger y (the assembly of
// config/models/fourbar.json).
Vec3 fourbar_p2(const FourBarSpec& spec);

}  // namespace mbo::peers
