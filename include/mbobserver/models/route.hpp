// A route for the path-following driver: a centre line made of legs (straights, arcs, lane
// changes), sampled every kRouteStep metres, with the speed the driver may drive at each sample
// (the leg's limit, the bends' lateral acceleration, and the braking curve ahead of both),
// the stops (traffic lights, queues, junctions) and the hard brakes along it. mixed_drive_route()
// is the several-minute drive of the mixed_drive manoeuvre.
#pragma once

#include <cstddef>
#include <vector>

namespace mbo::models {

inline constexpr double kRouteStep = 0.5;  // m between samples

struct RouteLeg {
  enum class Kind { straight, arc, lane_change } kind = Kind::straight;
  double length_m = 0;  // straight, lane_change
  double radius_m = 0, angle_deg = 0;  // arc: + left
  double offset_m = 0;  // lane_change: + left, over length_m (smoothstep)
  double speed_kmh = 50;  // limit on this leg
  double stop_s = -1;  // a stop this far into the leg (< 0: none) ...
  double stop_dwell_s = 0;  // ... held for this long (< 0: for good)
  double hard_brake_s = -1;  // an emergency brake this far into the leg (< 0: none) ...
  double hard_brake_until_kmh = 0;  // ... down to this speed
};

struct Route {
  struct Stop {
    double s, dwell;  // position along the route; held time (< 0: for good)
  };
  struct HardBrake {
    double s, until_mps;
  };
  std::vector<double> x, y, s;  // the samples
  std::vector<double> speed;  // m/s the driver may drive at each sample
  std::vector<Stop> stops;  // in order along the route
  std::vector<HardBrake> hard_brakes;
  double length() const { return s.empty() ? 0 : s.back(); }
  // The sample nearest to (px, py), searched from `from` over the next `window` samples.
  std::size_t nearest(double px, double py, std::size_t from, std::size_t window) const;
  // Position and allowed speed at a distance along the route (clamped to its ends).
  void at(double distance, double& px, double& py) const;
  double speed_at(double distance) const;
};

// Builds the route from (x0, y0) heading yaw0 (rad): the legs in order, bends limited to
// lateral_accel (m/s^2), the braking curve at brake_decel (m/s^2) before every lower limit.
Route build_route(const std::vector<RouteLeg>& legs, double x0, double y0, double yaw0, double lateral_accel,
                  double brake_decel);

// The mixed drive (issue 17): pull-away, urban stop-and-go with two junction turns, a
// roundabout, a highway with two lane changes, a bend and an emergency brake from 120 to
// 40 km/h, the exit, and a car park at walking pace; about 4.3 km. lane_offset_m: the width of
// a lane change.
std::vector<RouteLeg> mixed_drive_legs(double lane_offset_m);

}  // namespace mbo::models
