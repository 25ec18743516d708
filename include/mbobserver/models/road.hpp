// The road a vehicle drives on: a plane with grade and crossfall, cylindrical bumps laid
// across it (Macchi 2010 ch. 8.2.1: speed bumps of circular profile), and an optional height
// grid added to the plane. The ground frame is East-North-Up (x east, y north, z up), gravity
// along -z.
//
// Contact with a wheel (a disc of unloaded radius R0 in the plane normal to its axle a, centre
// C) is found per surface feature: the plane (with the grid's height and slope under the
// wheel), and every bump within reach. Each feature gives its own contact point, normal and
// penetration, so a wheel rolling onto a bump carries a second contact whose load grows from
// zero while the first one unloads: the total force stays continuous (the thesis's code switches
// from the plane to the bump instead, which makes the force direction jump).
#pragma once

#include <array>
#include <vector>

#include <Eigen/Dense>

#include "mbobserver/core/json_reader.hpp"

namespace mbo::models {

using Eigen::Vector3d;

// A bump of circular cross-section (Macchi 2010 eq. (8.10)) whose axis lies in the road plane,
// across the road (along the plane's y tangent). Given by where its crest is along x, how high
// the crest stands above the road and how long its footprint is (chord); the cylinder radius
// follows: r = (chord^2 / 4 + height^2) / (2 height).
struct Bump {
  double x_m = 0;  // crest position along the ground x axis
  double height_m = 0;  // crest height above the road plane
  double length_m = 0;  // footprint length along x (chord)
  double radius() const { return (length_m * length_m / 4 + height_m * height_m) / (2 * height_m); }
};

// Heights (m) added to the plane on a regular grid, bilinear between nodes, zero outside.
struct HeightGrid {
  double x0_m = 0, y0_m = 0;  // first node
  double dx_m = 1, dy_m = 1;  // spacing
  int nx = 0, ny = 0;
  std::vector<double> z_m;  // nx * ny, x fastest
  bool empty() const { return nx == 0; }
  // Height and its gradient (dh/dx, dh/dy) at (x, y).
  void sample(double x, double y, double& h, double& hx, double& hy) const;
};

struct Road {
  double z0_m = 0;  // plane height at x = y = 0
  double grade = 0;  // dz/dx of the plane (0.05 = 5 % uphill towards +x)
  double crossfall = 0;  // dz/dy of the plane
  std::vector<Bump> bumps;
  HeightGrid grid;

  Vector3d normal() const;  // unit normal of the plane
  Vector3d tangent_x() const;  // unit tangent of the plane in the x-z plane
  double height(double x, double y) const;  // plane + grid (bumps not included)
};

// One contact between a wheel and one feature of the road.
struct Contact {
  Vector3d point = Vector3d::Zero();  // on the wheel's rim plane: C - rho d
  Vector3d normal = Vector3d::UnitZ();  // road normal at the contact (unit, out of the road)
  Vector3d d = Vector3d::UnitZ();  // unit direction from C to the contact point in the wheel plane, reversed
                                   // (contact = C - rho d)
  double rho = 0;  // loaded radius |contact - C|
  double penetration = 0;  // R0 - rho (> 0: in contact)
};

inline constexpr int kMaxContacts = 3;

// Contacts of the wheel (centre C, unit axle a, unloaded radius R0) with the road: the plane
// always (penetration may be negative: no contact), and bumps within reach. Returns the count.
int road_contacts(const Road& road, const Vector3d& C, const Vector3d& a, double R0,
                  std::array<Contact, kMaxContacts>& out);

// Reads a "road" object (see docs/vehicle-format.md).
Road load_road(const JsonReader& r);

}  // namespace mbo::models
