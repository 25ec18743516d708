#include "mbobserver/runtime/estimate_json.hpp"

#include <cstring>

#include "json_writer.hpp"

namespace mbo::runtime {

namespace {

using detail::JsonWriter;

void write_faults(JsonWriter& w, std::uint32_t faults) {
  w.key("faults");
  w.begin_array();
  for (std::size_t bit = 0; bit < 32; ++bit) {
    if (!(faults & (1u << bit))) continue;
    if (bit < kFaultNames.size()) {
      w.string(kFaultNames[bit]);
    } else {
      // A bit without a name yet: still visible, never silently dropped.
      char name[8] = {'b', 'i', 't', '_', 0, 0, 0, 0};
      std::size_t n = 4;
      if (bit >= 10) name[n++] = static_cast<char>('0' + bit / 10);
      name[n++] = static_cast<char>('0' + bit % 10);
      w.string(std::string_view(name, n));
    }
  }
  w.end_array();
}

void write_sensors(JsonWriter& w, const std::array<SensorHealth, kSensorKindCount>& sensors) {
  w.key("sensors");
  w.begin_object();
  for (std::size_t i = 0; i < kSensorKindCount; ++i) {
    const SensorHealth& s = sensors[i];
    w.key(kSensorKindNames[i]);
    w.begin_object();
    w.key("age_ms");
    if (s.age_ms < 0)
      w.null();  // never received
    else
      w.number(s.age_ms);
    w.field_int("fused", s.fused);
    w.field_int("rejected", s.rejected);
    w.field("test_ratio", s.test_ratio);
    w.field_bool("timed_out", s.timed_out);
    w.field("nis", s.nis);
    w.field_bool("consistent", s.consistent);
    w.field_int("implausible", s.implausible);
    w.end_object();
  }
  w.end_object();
}

// The parameters the observer estimates: value, 1-sigma and whether it has learned them.
void write_calibration(JsonWriter& w, const std::array<Calibration, kCalibrationCount>& cal) {
  w.key("calibration");
  w.begin_object();
  for (std::size_t i = 0; i < kCalibrationCount; ++i) {
    if (!cal[i].estimated) continue;
    w.key(kCalibrationNames[i]);
    w.begin_object();
    w.field("value", cal[i].value);
    w.field("std", cal[i].std);
    w.field_bool("converged", cal[i].converged);
    w.end_object();
  }
  w.end_object();
}

void write_latency(JsonWriter& w, std::string_view name, const LatencySummary& l) {
  w.key(name);
  w.begin_object();
  w.field_int("count", l.count);
  w.field("p50", l.p50_us);
  w.field("p99", l.p99_us);
  w.field("p999", l.p999_us);
  w.field("max", l.max_us);
  w.end_object();
}

}  // namespace

void write_estimate_json(const EstimateRecord& r, std::string& out, const JsonOptions& opt) {
  if (out.capacity() < 4096) out.reserve(4096);
  JsonWriter w(out);
  w.begin_object();
  w.field_str("schema", kEstimateSchema);
  w.field_int("seq", r.seq);
  w.field("t", r.t);
  if (opt.wall_clock) w.field("t_wall", r.t_wall);

  w.key("state");
  w.begin_object();
  w.field("x", r.x);
  w.field("y", r.y);
  w.field("z", r.z);
  w.field("yaw", r.yaw);
  w.field("pitch", r.pitch);
  w.field("roll", r.roll);
  w.field("vx", r.vx);
  w.field("vy", r.vy);
  w.field("vz", r.vz);
  w.field("yaw_rate", r.yaw_rate);
  w.field("v_long", r.v_long);
  w.field("v_lat", r.v_lat);
  w.field("a_long", r.a_long);
  w.field("a_lat", r.a_lat);
  w.field("yaw_accel", r.yaw_accel);
  w.field("lat", r.lat);
  w.field("lon", r.lon);
  w.field("alt", r.alt);
  w.end_object();

  w.key("origin");
  w.begin_object();
  w.field("lat", r.origin_lat);
  w.field("lon", r.origin_lon);
  w.field("alt", r.origin_alt);
  w.end_object();

  w.key("virtual");
  w.begin_object();
  w.field("sideslip_deg", r.sideslip_deg);
  w.field_array("tyre_fz", r.tyre_fz);
  w.field_array("tyre_fy", r.tyre_fy);
  w.field_array("tyre_fx", r.tyre_fx);
  w.field_array("slip_ratio", r.slip_ratio);
  w.field_array("slip_angle_deg", r.slip_angle_deg);
  w.field_array("suspension_travel", r.suspension_travel);
  w.field_array("wheel_spin_angle", r.wheel_spin_angle);
  w.field_array("wheel_speed", r.wheel_speed);
  w.field("friction", r.friction);
  w.field("mass", r.mass);
  w.end_object();

  w.key("std");
  w.begin_object();
  w.field("x", r.std_x);
  w.field("y", r.std_y);
  w.field("yaw", r.std_yaw);
  w.field("vx", r.std_vx);
  w.field("vy", r.std_vy);
  w.field("sideslip_deg", r.std_sideslip_deg);
  w.field("friction", r.std_friction);
  w.field_array("tyre_fz", r.std_tyre_fz);
  w.field_array("tyre_fy", r.std_tyre_fy);
  w.field_array("tyre_fx", r.std_tyre_fx);
  w.field_array("slip_ratio", r.std_slip_ratio);
  w.field_array("slip_angle_deg", r.std_slip_angle_deg);
  w.field_array("suspension_travel", r.std_suspension_travel);
  w.field_array("wheel_spin_angle", r.std_wheel_spin_angle);
  w.field_array("wheel_speed", r.std_wheel_speed);
  w.field("a_long", r.std_a_long);
  w.field("a_lat", r.std_a_lat);
  w.field("yaw_accel", r.std_yaw_accel);
  w.end_object();

  w.key("health");
  w.begin_object();
  w.field_bool("valid", r.valid);
  w.key("validity");
  w.begin_object();
  w.field_bool("position", r.validity.position);
  w.field_bool("heading", r.validity.heading);
  w.field_bool("velocity", r.validity.velocity);
  w.field_bool("attitude", r.validity.attitude);
  w.field_bool("virtual_sensors", r.validity.virtual_sensors);
  w.field_bool("tyre_loads", r.validity.tyre_loads);
  w.field_bool("tyre_forces", r.validity.tyre_forces);
  w.end_object();
  write_sensors(w, r.sensors);
  write_faults(w, r.faults);
  w.field_int("resets", r.resets);
  w.end_object();
  write_calibration(w, r.calibration);

  if (opt.wall_clock) {
    w.key("latency_us");
    w.begin_object();
    w.field("frame_to_step", r.frame_to_step_us);
    w.field("step_compute", r.step_compute_us);
    w.field("step_to_send", r.step_to_send_us);
    w.end_object();
  }
  w.end_object();
}

namespace {

// Every field of a status record after "schema" (the status datagram and the summary).
void write_status_fields(JsonWriter& w, const StatusRecord& s, const JsonOptions& opt) {
  w.field_int("seq", s.seq);
  w.field("t", s.t);
  if (opt.wall_clock) {
    w.field("t_wall", s.t_wall);
    w.field("uptime_s", s.uptime_s);
  }

  w.key("frames");
  w.begin_object();
  w.field_int("received", s.frames.received);
  w.field_int("decoded", s.frames.decoded);
  w.field_int("unknown", s.frames.unknown);
  w.field_int("rejected", s.frames.rejected);
  w.field_int("bad_log_lines", s.frames.bad_log_lines);
  w.field_int("timestamp_backwards", s.frames.timestamp_backwards);
  w.field_int("time_jumps", s.frames.time_jumps);
  w.field_int("time_shifts", s.frames.time_shifts);
  w.field_int("known_unmapped", s.frames.known_unmapped);
  w.field_int("error_frames", s.frames.error_frames);
  w.end_object();

  std::uint64_t overflows = 0;
  w.key("queues");
  w.begin_object();
  for (std::size_t i = 0; i < std::min(s.queue_count, s.queues.size()); ++i) {
    const QueueCounters& c = s.queues[i].counters;
    overflows += c.overflows;
    w.key(name_of(s.queues[i].name));
    w.begin_object();
    w.field_int("capacity", c.capacity);
    w.field_int("depth", c.depth);
    w.field_int("high_water", c.high_water);
    w.field_int("pushed", c.pushed);
    w.field_int("popped", c.popped);
    w.field_int("overflows", c.overflows);
    w.end_object();
  }
  w.end_object();
  w.field_int("queue_overflows", overflows);

  w.field_int("steps", s.steps);
  w.field_int("deadline_misses", s.deadline_misses);
  w.field_int("skipped_steps", s.skipped_steps);
  w.key("deadline_miss_episodes");
  w.begin_object();
  w.field_int("total", s.deadline_miss_episodes.total);
  for (std::size_t c = 0; c < kMissCauseNames.size(); ++c)
    w.field_int(kMissCauseNames[c], s.deadline_miss_episodes.by_cause[c]);
  w.end_object();
  w.field_int("resets", s.resets);
  w.key("observer");
  w.begin_object();
  w.field_int("model_step_failures", s.observer.model_step_failures);
  w.field_int("correction_failures", s.observer.correction_failures);
  w.field_int("stale_samples", s.observer.stale_samples);
  w.field_int("invalid_samples", s.observer.invalid_samples);
  w.end_object();
  w.field_bool("valid", s.valid);
  write_faults(w, s.faults);
  w.field_int("valid_steps", s.valid_steps);
  w.key("faults_steps");
  w.begin_object();
  for (std::size_t b = 0; b < kFaultNames.size(); ++b) w.field_int(kFaultNames[b], s.faults_steps[b]);
  w.end_object();

  if (opt.wall_clock) {
    w.key("latency_us");
    w.begin_object();
    write_latency(w, "frame_to_step", s.frame_to_step);
    write_latency(w, "step_compute", s.step_compute);
    write_latency(w, "step_to_send", s.step_to_send);
    write_latency(w, "wakeup_lateness", s.wakeup_lateness);
    w.end_object();
  }

  w.key("publisher");
  w.begin_object();
  w.field_int("records", s.publisher.records);
  w.field_int("estimates_sent", s.publisher.estimates_sent);
  w.field_int("status_sent", s.publisher.status_sent);
  w.field_int("decimated", s.publisher.decimated);
  w.field_int("send_errors", s.publisher.send_errors);
  w.key("last_send_error");
  if (s.publisher.last_send_errno == 0)
    w.null();
  else
    w.string(errno_name(s.publisher.last_send_errno));
  w.end_object();

  w.key("outputs");
  w.begin_object();
  w.field_int("record_bytes", s.outputs.record_bytes);
  w.field_int("records_lost", s.outputs.records_lost);
  w.field_int("write_errors", s.outputs.write_errors);
  w.key("last_write_error");
  if (s.outputs.last_write_errno == 0)
    w.null();
  else
    w.string(errno_name(s.outputs.last_write_errno));
  w.field_int("reopens", s.outputs.reopens);
  w.end_object();

  w.key("can");
  w.begin_object();
  for (std::size_t i = 0; i < std::min(s.can_count, s.can.size()); ++i) {
    const CanControllerStatus& c = s.can[i];
    w.key(name_of(c.name));
    w.begin_object();
    const auto state = static_cast<std::size_t>(c.state);
    w.field_str("state", state < kCanStateNames.size() ? kCanStateNames[state] : "unknown");
    w.field_int("tx_errors", c.tx_errors);
    w.field_int("rx_errors", c.rx_errors);
    w.field_int("error_frames", c.error_frames);
    w.field_int("restarts", c.restarts);
    w.end_object();
  }
  w.end_object();

  if (const auto& g = s.gnss_serial; g.present) {
    w.key("gnss_serial");
    w.begin_object();
    w.field_bool("connected", g.connected);
    w.field_int("lines", g.lines);
    w.field_int("parsed", g.parsed);
    w.field_int("unsupported", g.unsupported);
    w.field_int("rejected", g.rejected);
    w.field_int("overlong", g.overlong);
    w.field_int("read_errors", g.read_errors);
    w.field_int("reconnects", g.reconnects);
    w.field_int("fix_time_stamped", g.fix_time_stamped);
    w.field_int("fix_time_unsynchronised", g.fix_time_unsynchronised);
    w.field_int("fix_time_untimed", g.fix_time_untimed);
    w.field("last_fix_age_s", g.last_fix_age_s);
    w.end_object();
  }

  write_sensors(w, s.sensors);
  write_calibration(w, s.calibration);
}

void write_run(JsonWriter& w, const RunSummary& r) {
  w.key("run");
  w.begin_object();
  w.field_str("mode", r.replay ? "replay" : "live");
  if (r.replay) {
    w.field_str("log", r.log);
    w.field_str("rate", r.rate);
    w.field_int("log_lines", r.log_lines);
    w.key("log_problems_first");
    w.begin_array();
    for (const auto& p : r.log_problems_first) w.string(p);
    w.end_array();
  }
  w.field("wall_time_s", r.wall_time_s);
  w.field("estimator_time_s", r.estimator_time_s);
  w.key("throughput");
  w.begin_object();
  w.field("steps_per_s", r.steps_per_s);
  w.field("frames_per_s", r.frames_per_s);
  w.field("real_time_factor", r.real_time_factor);
  w.end_object();
  w.field_str("frame_to_step_clock", r.frame_to_step_clock);
  w.key("deadline_miss_episodes_first_at_monotonic_s");
  w.begin_array();
  for (double t : r.deadline_miss_episodes_first_at_monotonic_s) w.number(t);
  w.end_array();
  w.field("valid_fraction", r.valid_fraction);
  w.field_int("records_written", r.records_written);
  w.field("max_rss_mb", r.max_rss_mb);
  w.end_object();
}

}  // namespace

void write_status_json(const StatusRecord& s, std::string& out, const JsonOptions& opt) {
  if (out.capacity() < 8192) out.reserve(8192);
  JsonWriter w(out);
  w.begin_object();
  w.field_str("schema", kStatusSchema);
  write_status_fields(w, s, opt);
  w.end_object();
}

std::string summary_json(const StatusRecord& s, const RunSummary& run) {
  std::string out;
  JsonWriter w(out);
  w.begin_object();
  w.field_str("schema", kSummarySchema);
  write_status_fields(w, s, JsonOptions{});
  write_run(w, run);
  w.end_object();
  return out;
}

std::string estimate_json(const EstimateRecord& r, const JsonOptions& opt) {
  std::string out;
  write_estimate_json(r, out, opt);
  return out;
}

std::string status_json(const StatusRecord& s, const JsonOptions& opt) {
  std::string out;
  write_status_json(s, out, opt);
  return out;
}

std::string_view errno_name(int err) noexcept {
  // glibc >= 2.32; NULL for a number it does not know.
  const char* name = ::strerrorname_np(err);
  return name ? std::string_view(name) : std::string_view("unknown");
}

}  // namespace mbo::runtime
