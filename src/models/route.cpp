#include "mbobserver/models/route.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mbo::models {
namespace {

double smoothstep(double x) {
  x = std::clamp(x, 0.0, 1.0);
  return x * x * (3 - 2 * x);
}

}  // namespace

std::size_t Route::nearest(double px, double py, std::size_t from, std::size_t window) const {
  std::size_t best = std::min(from, x.size() - 1);
  double best_d = std::numeric_limits<double>::max();
  const std::size_t end = std::min(x.size(), from + window);
  for (std::size_t i = std::min(from, x.size() - 1); i < end; ++i) {
    const double d = (x[i] - px) * (x[i] - px) + (y[i] - py) * (y[i] - py);
    if (d < best_d) best_d = d, best = i;
  }
  return best;
}

void Route::at(double distance, double& px, double& py) const {
  const double f = std::clamp(distance / kRouteStep, 0.0, static_cast<double>(x.size() - 1));
  const std::size_t i = std::min(static_cast<std::size_t>(f), x.size() - 2);
  const double a = f - static_cast<double>(i);
  px = x[i] + a * (x[i + 1] - x[i]);
  py = y[i] + a * (y[i + 1] - y[i]);
}

double Route::speed_at(double distance) const {
  const double f = std::clamp(distance / kRouteStep, 0.0, static_cast<double>(x.size() - 1));
  const std::size_t i = std::min(static_cast<std::size_t>(f), x.size() - 2);
  const double a = f - static_cast<double>(i);
  return speed[i] + a * (speed[i + 1] - speed[i]);
}

Route build_route(const std::vector<RouteLeg>& legs, double x0, double y0, double yaw0, double lateral_accel,
                  double brake_decel) {
  Route r;
  // The centre line (cx, cy, heading) and the lateral offset of the lane driven, sample by sample.
  double cx = x0, cy = y0, h = yaw0, offset = 0, dist = 0;
  std::vector<double> off;
  auto push = [&](double limit) {
    r.x.push_back(cx - std::sin(h) * offset);
    r.y.push_back(cy + std::cos(h) * offset);
    r.s.push_back(dist);
    r.speed.push_back(limit);
    off.push_back(offset);
  };
  push(legs.empty() ? 0 : legs.front().speed_kmh / 3.6);
  for (const auto& leg : legs) {
    const double limit = leg.speed_kmh / 3.6;
    const double start = dist;
    double length = leg.length_m, curvature = 0;
    if (leg.kind == RouteLeg::Kind::arc) {
      length = leg.radius_m * std::abs(leg.angle_deg) * M_PI / 180;
      curvature = (leg.angle_deg >= 0 ? 1 : -1) / leg.radius_m;
    }
    const double offset0 = offset;
    const int n = std::max(1, static_cast<int>(std::lround(length / kRouteStep)));
    const double ds = length / n;
    // a bend at most lateral_accel: v^2 kappa <= a
    const double bend = curvature != 0 ? std::sqrt(lateral_accel / std::abs(curvature)) : limit;
    for (int k = 1; k <= n; ++k) {
      // the arc's chord at its mid heading: exact positions on the circle
      cx += ds * std::cos(h + 0.5 * ds * curvature);
      cy += ds * std::sin(h + 0.5 * ds * curvature);
      h += ds * curvature;
      dist += ds;
      if (leg.kind == RouteLeg::Kind::lane_change) offset = offset0 + leg.offset_m * smoothstep(k / double(n));
      push(std::min(limit, bend));
    }
    if (leg.stop_s >= 0) r.stops.push_back({start + std::min(leg.stop_s, length), leg.stop_dwell_s});
    if (leg.hard_brake_s >= 0) r.hard_brakes.push_back({start + leg.hard_brake_s, leg.hard_brake_until_kmh / 3.6});
  }
  // Sample spacing is uniform only per leg; resample onto kRouteStep so that at() and
  // speed_at() index by distance.
  Route u;
  u.stops = r.stops;
  u.hard_brakes = r.hard_brakes;
  const double total = r.s.back();
  std::size_t j = 0;
  for (double d = 0; d <= total + 1e-9; d += kRouteStep) {
    while (j + 2 < r.s.size() && r.s[j + 1] < d) ++j;
    const double a = std::clamp((d - r.s[j]) / std::max(r.s[j + 1] - r.s[j], 1e-12), 0.0, 1.0);
    u.x.push_back(r.x[j] + a * (r.x[j + 1] - r.x[j]));
    u.y.push_back(r.y[j] + a * (r.y[j + 1] - r.y[j]));
    u.s.push_back(d);
    u.speed.push_back(std::min(r.speed[j], r.speed[j + 1]));
  }
  // Braking curve: nowhere faster than what brake_decel can take down to a lower limit ahead.
  for (std::size_t i = u.speed.size() - 1; i-- > 0;)
    u.speed[i] = std::min(u.speed[i], std::sqrt(u.speed[i + 1] * u.speed[i + 1] + 2 * brake_decel * kRouteStep));
  return u;
}

std::vector<RouteLeg> mixed_drive_legs(double lane) {
  using K = RouteLeg::Kind;
  auto straight = [](double len, double kmh) {
    RouteLeg l;
    l.kind = K::straight, l.length_m = len, l.speed_kmh = kmh;
    return l;
  };
  auto arc = [](double radius, double deg, double kmh) {
    RouteLeg l;
    l.kind = K::arc, l.radius_m = radius, l.angle_deg = deg, l.speed_kmh = kmh;
    return l;
  };
  auto change = [](double len, double offset, double kmh) {
    RouteLeg l;
    l.kind = K::lane_change, l.length_m = len, l.offset_m = offset, l.speed_kmh = kmh;
    return l;
  };
  auto stop_at_end = [](RouteLeg l, double dwell) {
    l.stop_s = l.length_m, l.stop_dwell_s = dwell;
    return l;
  };
  std::vector<RouteLeg> legs;
  // Urban: pull away, a red light, a right turn at a junction, a queue and a stop line, a left
  // turn (right-hand traffic).
  legs.push_back(stop_at_end(straight(180, 50), 6));
  legs.push_back(straight(120, 50));
  legs.push_back(arc(12, -90, 30));
  RouteLeg queue = straight(200, 50);
  queue.stop_s = 80, queue.stop_dwell_s = 4;
  legs.push_back(queue);
  legs.push_back(stop_at_end(straight(0.5, 50), 3));
  legs.push_back(arc(15, 90, 30));
  legs.push_back(straight(150, 50));
  // A roundabout, counter-clockwise: deflect right into it, three quarters round, right out.
  legs.push_back(arc(15, -45, 25));
  legs.push_back(arc(18, 270, 25));
  legs.push_back(arc(15, -45, 25));
  legs.push_back(straight(150, 50));
  // Highway: the on-ramp bend, up to 120 km/h, a lane change out and back with a long bend
  // between, and an emergency brake from 120 to 40 km/h (a jam ahead); back up to 100.
  legs.push_back(arc(150, -60, 80));
  legs.push_back(straight(500, 120));
  legs.push_back(change(150, lane, 120));
  legs.push_back(straight(300, 120));
  legs.push_back(arc(1200, 20, 120));
  legs.push_back(change(150, -lane, 120));
  RouteLeg jam = straight(400, 120);
  jam.hard_brake_s = 150, jam.hard_brake_until_kmh = 40;
  legs.push_back(jam);
  legs.push_back(straight(400, 100));
  // The exit bend down to a junction, then a car park at walking pace, ending parked.
  legs.push_back(arc(100, -90, 60));
  legs.push_back(stop_at_end(straight(150, 50), 3));
  legs.push_back(straight(40, 10));
  legs.push_back(arc(8, 90, 10));
  legs.push_back(straight(25, 10));
  legs.push_back(arc(8, 90, 10));
  legs.push_back(straight(15, 10));
  legs.push_back(arc(8, -90, 10));
  legs.push_back(stop_at_end(straight(10, 10), -1));
  return legs;
}

}  // namespace mbo::models
