#include "mbobserver/models/road.hpp"

#include <algorithm>
#include <cmath>

namespace mbo::models {
namespace {

// Contact of the wheel disc with a plane through X0 with unit normal n: the lowest rim point
// along n lies at C - rho d, d = the normal projected on the wheel plane (Macchi 2010 Fig. 8.17:
// ux = uA x n, ur = uA x ux).
Contact plane_contact(const Vector3d& C, const Vector3d& a, double R0, const Vector3d& X0, const Vector3d& n) {
  Contact c;
  Vector3d p = n - n.dot(a) * a;
  double pn = p.norm();
  c.d = pn > 1e-9 ? Vector3d(p / pn) : n;
  double dn = c.d.dot(n);
  c.rho = (C - X0).dot(n) / std::max(dn, 1e-9);
  c.penetration = R0 - c.rho;
  c.point = C - c.rho * c.d;
  c.normal = n;
  return c;
}

}  // namespace

void HeightGrid::sample(double x, double y, double& h, double& hx, double& hy) const {
  h = hx = hy = 0;
  if (empty()) return;
  double fx = (x - x0_m) / dx_m, fy = (y - y0_m) / dy_m;
  if (fx < 0 || fy < 0 || fx > nx - 1 || fy > ny - 1) return;
  int i = std::min(static_cast<int>(fx), nx - 2), j = std::min(static_cast<int>(fy), ny - 2);
  if (nx == 1 || ny == 1) return;
  double tx = fx - i, ty = fy - j;
  double z00 = z_m[j * nx + i], z10 = z_m[j * nx + i + 1];
  double z01 = z_m[(j + 1) * nx + i], z11 = z_m[(j + 1) * nx + i + 1];
  h = (1 - tx) * (1 - ty) * z00 + tx * (1 - ty) * z10 + (1 - tx) * ty * z01 + tx * ty * z11;
  hx = ((1 - ty) * (z10 - z00) + ty * (z11 - z01)) / dx_m;
  hy = ((1 - tx) * (z01 - z00) + tx * (z11 - z10)) / dy_m;
}

Vector3d Road::normal() const { return Vector3d(-grade, -crossfall, 1).normalized(); }
Vector3d Road::tangent_x() const { return Vector3d(1, 0, grade).normalized(); }

double Road::height(double x, double y) const {
  double h, hx, hy;
  grid.sample(x, y, h, hx, hy);
  return z0_m + grade * x + crossfall * y + h;
}

int road_contacts(const Road& road, const Vector3d& C, const Vector3d& a, double R0,
                  std::array<Contact, kMaxContacts>& out) {
  // The plane (and the grid's local tangent plane) under the wheel centre.
  double h = 0, hx = 0, hy = 0;
  road.grid.sample(C.x(), C.y(), h, hx, hy);
  Vector3d n = Vector3d(-(road.grade + hx), -(road.crossfall + hy), 1).normalized();
  Vector3d X0(C.x(), C.y(), road.z0_m + road.grade * C.x() + road.crossfall * C.y() + h);
  int count = 0;
  out[count++] = plane_contact(C, a, R0, X0, n);

  // Bumps: the wheel in the cross-section of the cylinder (the plane spanned by the road's x
  // tangent and normal). Circle against circle on the cap, circle against the cap's edge
  // beside it; both agree where they meet, so the contact moves continuously. A steered wheel
  // cuts the cylinder in an ellipse (Macchi 2010 eqs. (8.11)-(8.18)); here it is taken as its
  // circle, an error of order (1 - cos(steer)) in the penetration.
  const Vector3d n0 = road.normal(), tx = road.tangent_x(), ty = n0.cross(tx);
  for (const auto& b : road.bumps) {
    if (count == kMaxContacts) break;
    const double r = b.radius();
    Vector3d base(b.x_m, 0, road.z0_m + road.grade * b.x_m);
    Vector3d Ob = base + (b.height_m - r) * n0;  // cylinder axis point (below the road if r > h)
    Vector3d rel = C - Ob;
    double xi = rel.dot(tx), zeta = rel.dot(n0), along = rel.dot(ty);
    double D = std::hypot(xi, zeta);
    if (D > R0 + r || D < 1e-9) continue;
    const double zeta_road = r - b.height_m;  // road level in cylinder coordinates
    Contact c;
    if (zeta / D >= zeta_road / r) {  // on the cap
      c.normal = (xi * tx + zeta * n0) / D;
      c.penetration = R0 + r - D;
    } else {  // on the edge of the cap
      double xe = std::copysign(std::sqrt(std::max(r * r - zeta_road * zeta_road, 0.0)), xi);
      double ex = xi - xe, ez = zeta - zeta_road;
      double De = std::hypot(ex, ez);
      if (De < 1e-9) continue;
      c.normal = (ex * tx + ez * n0) / De;
      c.penetration = R0 - De;
    }
    if (c.penetration <= 0) continue;
    (void)along;
    Vector3d p = c.normal - c.normal.dot(a) * a;
    double pn = p.norm();
    c.d = pn > 1e-9 ? Vector3d(p / pn) : c.normal;
    c.rho = R0 - c.penetration;
    c.point = C - c.rho * c.d;
    out[count++] = c;
  }
  return count;
}

Road load_road(const JsonReader& r) {
  Road road;
  // Physical ranges (docs/vehicle-format.md): heights of a road on Earth, m; positions
  // within a drive of 10 000 km.
  constexpr double kMaxHeight_m = 1e4, kMaxDistance_m = 1e7;
  road.z0_m = r.number_in("z0_m", -kMaxHeight_m, kMaxHeight_m, 0.0);
  road.grade = r.number_in("grade", -0.5, 0.5, 0.0);
  road.crossfall = r.number_in("crossfall", -0.5, 0.5, 0.0);
  if (auto bs = r.find("bumps")) {
    for (const auto& item : bs->items()) {
      Bump b;
      b.x_m = item.number_in("x_m", -kMaxDistance_m, kMaxDistance_m);
      b.height_m = item.positive_up_to("height_m", 1);
      b.length_m = item.positive_up_to("length_m", 1000);
      if (b.height_m > b.length_m / 2)
        item.fail("height_m must not exceed half of length_m (the profile is a circular cap)");
      item.finish();
      road.bumps.push_back(b);
    }
    std::sort(road.bumps.begin(), road.bumps.end(), [](const Bump& a, const Bump& b) { return a.x_m < b.x_m; });
    for (std::size_t i = 1; i < road.bumps.size(); ++i) {
      const auto& p = road.bumps[i - 1];
      const auto& q = road.bumps[i];
      if (q.x_m - q.length_m / 2 < p.x_m + p.length_m / 2) bs->fail("bumps overlap");
    }
  }
  if (auto g = r.find("grid")) {
    HeightGrid& grid = road.grid;
    auto origin = g->numbers_in("origin_m", 2, -kMaxDistance_m, kMaxDistance_m);
    grid.x0_m = origin[0];
    grid.y0_m = origin[1];
    auto spacing = g->numbers_in("spacing_m", 2, -1e4, 1e4);
    grid.dx_m = spacing[0];
    grid.dy_m = spacing[1];
    if (!(grid.dx_m > 0 && grid.dy_m > 0)) g->at("spacing_m").fail("spacings must be > 0");
    grid.nx = static_cast<int>(g->integer("nx", 2, 100000));
    grid.ny = static_cast<int>(g->integer("ny", 2, 100000));
    grid.z_m = g->numbers_in("heights_m", 0, -kMaxHeight_m, kMaxHeight_m);
    if (grid.z_m.size() != static_cast<std::size_t>(grid.nx) * grid.ny)
      g->at("heights_m")
          .fail("expected nx * ny = " + std::to_string(grid.nx * grid.ny) + " heights, got " +
                std::to_string(grid.z_m.size()));
    g->finish();
  }
  r.finish();
  return road;
}

}  // namespace mbo::models
