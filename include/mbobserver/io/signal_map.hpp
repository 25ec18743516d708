// The "can" section of the configuration: which DBC files describe the bus, which
// interfaces to open, and which DBC signal feeds which measurement channel, with its unit.
//
//   "can": {
//     "dbc": ["vehicle.dbc"],                     one path or a list, relative to the config
//                                                 file; several files are merged
//     "interfaces": [                              optional (none for replay)
//       {"name": "can0", "fd": false, "restart_bus_off": false,
//        "reconnect_initial_s": 0.1, "reconnect_max_s": 5.0, "state_poll_s": 1.0}
//     ],
//     "signals": {                                 key: a channel of core/measurement.hpp
//       "accel_x": {"signal": "IMU_Accel.AccelX"},
//       "gyro_z":  {"signal": "IMU_Gyro.GyroZ", "unit": "deg/s"},
//       "steer_angle": {"signal": "EPS_01.Angle", "unit": "deg", "invert": true},
//       "drive_torque_fl": {"signal": "Motor.Tq", "scale": 0.5},
//       "wheel_count_fl": {"signal": "ABS.Teeth_FL", "modulus": 40000}
//     }
//   }
//
// "unit" is the unit of the DBC signal's physical value; without it the DBC's own unit
// string is used. A known unit converts to the channel's unit (SI, degrees for latitude and
// longitude); if the DBC states a known unit too, the two must agree. A unit this program
// does not know needs "scale", the factor from the physical value to the channel's unit
// (and "scale" is refused for a known unit, so there is one way to say each thing).
// "invert" negates (axis conventions). Wheel counters must be unsigned integers with factor
// 1 and offset 0; they wrap at 2^length unless "modulus" says otherwise. Every mistake is a
// ConfigError naming the config file and the JSON pointer.
//
// Several buses (issue 20): an interface may bring its own DBC files ("interfaces[].dbc"), and
// a mapping names the interface its message comes on ("bus": "can1"), so that can0 and can1
// may carry the same id with different meanings. A mapping without "bus" reads the top-level
// "dbc" on every interface that has no DBC of its own (and on any interface a log names that
// the configuration does not). DBC files are read forgivingly (dbc.hpp) unless "strict": a
// message or signal a mapping names must have loaded, or the start-up fails naming it.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mbobserver/core/json_reader.hpp"
#include "mbobserver/core/measurement.hpp"
#include "mbobserver/io/can_frame.hpp"
#include "mbobserver/io/dbc_codec.hpp"
#include "mbobserver/io/units.hpp"

namespace mbo::io {

struct CanInterfaceConfig {
  std::string name;
  bool own_dbc = false;  // "dbc" given: its frames are decoded with its own database
  bool fd = false;
  bool restart_bus_off = false;
  double reconnect_initial_s = 0.1;
  double reconnect_max_s = 5.0;
  double state_poll_s = 1.0;
};

struct CanId {
  std::uint32_t id = 0;
  bool extended = false;
  bool operator==(const CanId&) const = default;
};

struct SignalMapping {
  Channel channel = Channel::count;
  std::string message;  // DBC names
  std::string signal;
  const MessageCodec* codec = nullptr;
  std::size_t signal_index = 0;
  int bus = -1;  // interface index it is read on; -1: any interface of the top-level database
  std::size_t database = 0;  // which DBC set `codec` belongs to
  double scale = 1;  // physical value * scale = channel value (invert included)
  // The channel's dimension this mapping delivers (a wheel speed: angular rate or speed) and
  // one raw step of the signal in channel units (the DBC factor converted; 0: IEEE float).
  Dimension dimension = Dimension::count;
  double quantum = 0;
  std::optional<std::uint64_t> counter_modulus;  // wheel counters only
  // The DBC's [minimum|maximum] of the physical value, widened by half a raw step for the
  // rounding of the declared limits; unbounded when the DBC declares none ([0|0]).
  double minimum = -std::numeric_limits<double>::infinity();
  double maximum = std::numeric_limits<double>::infinity();
  // Within half a raw step of the declared limits: the value is flagged kAtLimit (not for
  // counters, which wrap through them).
  double limit_low = -std::numeric_limits<double>::infinity();
  double limit_high = std::numeric_limits<double>::infinity();
  std::string where;  // "config.json: /can/signals/gyro_z", for later messages
};

class SignalMap {
 public:
  // Reads the "can" section. DBC paths are relative to the config file's directory.
  static SignalMap from_config(const JsonReader& can);

  const std::vector<CanInterfaceConfig>& interfaces() const { return interfaces_; }
  // The configured interface of this name; -1: none (its frames go to the top-level DBC).
  int bus_index(std::string_view interface) const;
  // Whether any database of the frame's bus knows its id (unknown vs known but unmapped).
  bool known(const CanFrame& frame) const;
  // What the forgiving DBC loads warned of, "file:line: reason" each.
  const std::vector<std::string>& dbc_warnings() const { return warnings_; }
  const std::vector<SignalMapping>& mappings() const { return mappings_; }
  const SignalMapping* mapping(Channel c) const;
  // The wrap-around of a wheel counter channel (for the estimator's unwrapping).
  std::optional<std::uint64_t> counter_modulus(Channel c) const;
  // Ids of the messages that carry mapped signals on interface `bus` (kernel receive filters).
  std::vector<CanId> filter_ids(int bus = -1) const;

  // Measurements from one frame, stamped with the frame's time; `out` must hold
  // max_per_frame() entries. Frames of unmapped ids, remote and error frames give none. The
  // frame's `channel` is its interface's index in interfaces() (a replay maps the log's names
  // with bus_index()); any other value is an interface the configuration does not name.
  // A value outside its signal's DBC range, or a signal the frame is too short to hold, is
  // no measurement: its value is NaN, which consumers reject and count (the daemon's
  // frames.rejected). No allocation.
  std::size_t decode(const CanFrame& frame, std::span<Measurement> out) const;
  std::size_t max_per_frame() const { return max_per_frame_; }

  // The inverse direction, for the simulator: one entry per frame to send (a message, and
  // for multiplexed messages one entry per multiplexor value the mapped signals need).
  struct TxFrame {
    const MessageCodec* codec = nullptr;
    int bus = -1;  // the interface it goes on; -1: the first (or the writer's default)
    std::vector<std::size_t> mappings;  // indices into mappings()
    std::optional<double> cycle_time_s;  // from the DBC's GenMsgCycleTime
  };
  const std::vector<TxFrame>& tx_frames() const { return tx_frames_; }
  // Encodes the channel values of `tx` into a frame stamped `t` (other signals raw 0).
  // Counters are wrapped to their modulus. Returns false if a value had to be clamped to the
  // signal's range or was not finite (the frame is still complete).
  bool encode(const TxFrame& tx, const std::array<double, kChannelCount>& values, double t, CanFrame& out) const;

 private:
  SignalMap() = default;
  void index();
  std::size_t database_of(const CanFrame& frame) const;

  // Database 0 is the top-level "dbc" (empty when only interfaces have theirs); each
  // interface with its own "dbc" has one more. Held by pointer: mappings point into them.
  std::vector<std::unique_ptr<DbcCodec>> databases_;
  std::vector<std::size_t> interface_database_;  // per interface
  std::vector<CanInterfaceConfig> interfaces_;
  std::vector<SignalMapping> mappings_;
  // per database, codec message index -> mappings
  std::vector<std::vector<std::vector<std::size_t>>> by_message_;
  std::vector<std::string> warnings_;
  std::vector<TxFrame> tx_frames_;
  std::size_t max_per_frame_ = 0;
};

}  // namespace mbo::io
