// The estimate record of a vehicle observer step (core/estimate.hpp) from the corrected model,
// the filter's covariance and the health of the aiding units: what is published, with its
// 1-sigma and validity.
#pragma once

#include "mbobserver/core/estimate.hpp"
#include "mbobserver/estimation/error_ekf.hpp"
#include "mbobserver/models/vehicle.hpp"
#include "mbobserver/models/vehicle_outputs.hpp"

namespace mbo::est {

struct ValidityConfig;

// Observed coordinate (0..n-1) of the chassis coordinates the 1-sigma are published for; -1:
// not observed (their 1-sigma is then -1).
struct ObservedChassis {
  int x = -1, y = -1, yaw = -1;
};

// State and virtual sensors of the corrected model.
void record_outputs(const models::VehicleOutputs& o, EstimateRecord& r);

// 1-sigma of the published quantities from the filter covariance: x, y, yaw, vx, vy directly,
// the sideslip through v_lat = -sin(yaw) vx + cos(yaw) vy (beta ~ v_lat / speed), the road
// friction from its estimated input (`friction_input` k of the input block, -1: not estimated).
// `min_speed_for_sideslip`: below it the sideslip has no 1-sigma.
void record_uncertainty(const ErrorEkf& filter, const ObservedChassis& c, int friction_input,
                        double min_speed_for_sideslip, EstimateRecord& r);

// Which sources the configuration fuses and whether each has stopped.
struct SourcesLost {
  bool gnss = false, gyro = false, wheels = false, accelerometers = false;
};

// Per-output validity and `valid` from the 1-sigma bounds, the lost sources and the faults.
void record_validity(const ValidityConfig& v, const SourcesLost& lost, EstimateRecord& r);

}  // namespace mbo::est
