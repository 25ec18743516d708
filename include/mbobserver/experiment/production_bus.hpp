// What a production car's bus would carry instead of the simulated car's own sensors (issue
// 20), from the truth vehicle: the ABS unit's wheel speeds at its rolling radius, quantised as
// its signal is; the steering-wheel angle at a constant ratio; the engine torque and gear that
// give the truth's drive torques through a gearbox with a shift schedule; the master-cylinder
// pressure (the largest wheel pressure over its axle's line ratio: an ABS's modulation is not
// on the bus). A scenario's "production_bus" section; the Hall counts and the per-wheel inputs
// are then not on the bus.
#pragma once

#include <vector>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/core/measurement.hpp"
#include "mbobserver/estimation/vehicle_observer.hpp"
#include "mbobserver/models/vehicle.hpp"

namespace mbo::exp {

struct ProductionBusConfig {
  double wheel_rate_hz = 50, speed_quantum_kmh = 0.03, rolling_radius = 0.31;
  double steering_rate_hz = 100, steering_ratio = 15.5, steering_quantum_deg = 0.1;
  double engine_rate_hz = 100, final_drive = 3.9, efficiency = 1;
  std::vector<double> gear_ratios{3.6, 2.1, 1.4, 1.0, 0.8};
  std::vector<double> upshift_kmh{20, 40, 60, 85};
  std::string layout = "RWD";
  double brake_rate_hz = 100, front_ratio = 1, rear_ratio = 1, pressure_quantum_bar = 0.1;
};

ProductionBusConfig read_production_bus_config(const JsonReader& r);

// The observer's side of the same bus: Hall counts off, the wheel speeds' units and quantum,
// the steering ratio, the driveline and the brakes' line ratios.
void fit_observer_to_production_bus(const ProductionBusConfig& c, est::VehicleObserverConfig& o);

// Whether a channel of the simulated car's own sensors is replaced by the production bus.
bool replaced_by_production_bus(Channel c);

class ProductionBusSim {
 public:
  explicit ProductionBusSim(const models::Vehicle& truth, const ProductionBusConfig& c) : v_(truth), c_(c) {}
  void sample(double t, const mb::State& s, const models::VehicleInputs& in, double speed,
              std::vector<Measurement>& out);

 private:
  bool due(double t, double rate, long& next);
  const models::Vehicle& v_;
  ProductionBusConfig c_;
  long next_wheel_ = 0, next_steer_ = 0, next_engine_ = 0, next_brake_ = 0;
};

}  // namespace mbo::exp
