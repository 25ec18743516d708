// Records with every field set to a distinct, non-round value, shared by the tests.
#pragma once

#include <cerrno>

#include "mbobserver/core/estimate.hpp"
#include "mbobserver/runtime/status_record.hpp"

namespace mbo::test {

inline EstimateRecord sample_estimate(std::uint64_t seq = 1234) {
  EstimateRecord r;
  r.seq = seq;
  r.t = 12.345;
  r.t_wall = 1700000000.123;
  r.x = 101.25;
  r.y = -3.0000001;
  r.z = 0.31;
  r.yaw = 0.1;
  r.pitch = -0.002;
  r.roll = 0.0125;
  r.vx = 19.9;
  r.vy = 0.7;
  r.vz = -0.01;
  r.v_long = 19.91;
  r.v_lat = -0.3;
  r.yaw_rate = 0.25;
  r.sideslip_deg = -0.86;
  r.tyre_fx = {120, 130.5, -40, 2e3};
  r.tyre_fy = {1500, 1600, 1200, 1100};
  r.tyre_fz = {4100, 3900, 3600.25, 3400};
  r.slip_ratio = {0.01, 0.012, -0.003, 1e-5};
  r.slip_angle_deg = {1.2, 1.1, 0.8, 0.75};
  r.suspension_travel = {0.012, 0.01, -0.004, -0.002};
  r.std_x = 0.5;
  r.std_y = 0.6;
  r.std_yaw = 0.01;
  r.std_vx = 0.05;
  r.std_vy = 0.04;
  r.std_sideslip_deg = 0.2;
  r.friction = 0.93;
  r.std_friction = 0.01;
  r.valid = false;
  // tyre_forces set and tyre_loads not: a writer that swapped them would be seen
  r.validity = {.position = true,
                .heading = true,
                .velocity = true,
                .attitude = true,
                .virtual_sensors = false,
                .tyre_forces = true,
                .tyre_loads = false};
  r.faults = kFaultReset | kFaultGnssTimeout;
  r.resets = 2;
  auto& gnss = r.sensors[static_cast<std::size_t>(SensorKind::gnss_position)];
  gnss = {.age_ms = 20.5, .fused = 100, .rejected = 3, .test_ratio = 0.3, .timed_out = false};
  auto& gyro = r.sensors[static_cast<std::size_t>(SensorKind::gyroscope)];
  gyro = {.age_ms = 1.5, .fused = 5000, .rejected = 0, .test_ratio = 0.05, .timed_out = false};
  // wheels: never received (age_ms = -1, timed_out = true by default)
  r.frame_to_step_us = 812.5;
  r.step_compute_us = 240.25;
  r.step_to_send_us = 35;
  r.wakeup_lateness_us = 60;
  r.step_end_mono_ns = 123456789;
  return r;
}

inline runtime::StatusRecord sample_status() {
  runtime::StatusRecord s;
  s.seq = 9;
  s.t = 10.002;
  s.t_wall = 1700000010.5;
  s.uptime_s = 12.25;
  s.frames = {
      .received = 8000, .decoded = 7990, .unknown = 3, .rejected = 4, .bad_log_lines = 2, .timestamp_backwards = 1};
  s.add_queue("measurements",
              {.capacity = 8192, .depth = 12, .high_water = 40, .pushed = 30000, .popped = 29988, .overflows = 5});
  s.add_queue("estimates",
              {.capacity = 256, .depth = 0, .high_water = 3, .pushed = 5000, .popped = 5000, .overflows = 2});
  s.steps = 5000;
  s.deadline_misses = 1;
  s.skipped_steps = 0;
  s.frame_to_step = {.count = 5000, .p50_us = 700, .p99_us = 1900, .p999_us = 2100, .max_us = 2500};
  s.step_compute = {.count = 5000, .p50_us = 240, .p99_us = 310.5, .p999_us = 400, .max_us = 900};
  s.step_to_send = {.count = 1000, .p50_us = 30, .p99_us = 60, .p999_us = 80, .max_us = 95};
  s.wakeup_lateness = {.count = 5000, .p50_us = 50, .p99_us = 120, .p999_us = 300, .max_us = 2100};
  s.resets = 2;
  s.valid = true;
  s.faults = kFaultImuTimeout;
  s.publisher = {.records = 5000,
                 .estimates_sent = 1000,
                 .status_sent = 9,
                 .decimated = 4000,
                 .send_errors = 2,
                 .last_send_errno = ENETUNREACH};
  runtime::CanControllerStatus can0;
  runtime::set_name(can0.name, "can0");
  can0.state = runtime::CanState::error_warning;
  can0.tx_errors = 97;
  can0.rx_errors = 3;
  s.add_can(can0);
  s.gnss_serial = {.present = true,
                   .connected = true,
                   .lines = 5000,
                   .parsed = 4900,
                   .unsupported = 90,
                   .rejected = 10,
                   .fix_time_stamped = 3200,
                   .fix_time_unsynchronised = 1,
                   .fix_time_untimed = 2,
                   .last_fix_age_s = 0.083};
  s.sensors[static_cast<std::size_t>(SensorKind::gyroscope)] = {
      .age_ms = 1, .fused = 5, .rejected = 0, .test_ratio = 0.1, .timed_out = false};
  return s;
}

}  // namespace mbo::test
