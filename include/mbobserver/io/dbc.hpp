// The DBC model (messages, signals, multiplexing, value tables) and its parser.
//
// Why hand-written: Debian 12 ships no C++ DBC library (the maintained DBC readers are Python:
// cantools, canmatrix; the C/C++ ones on GitHub are unpackaged and either regex based or
// unmaintained). The DBC grammar we need is small: this parser reads what real files contain
// (the opendbc production files and the cantools edge cases under tests/fixtures/dbc) and
// skips, with a warning, the statements that do not affect decoding.
//
// Format notes (Vector "DBC File Format Documentation" 1.0.5, plus what CANdb++ writes):
//   BO_ <id> <name>: <size> <transmitter>        id bit 31 set = 29-bit identifier
//   SG_ <name> [M|m<n>|m<n>M] : <start>|<length>@<order><sign> (<factor>,<offset>)
//       [<min>|<max>] "<unit>" <receivers>
//   order: 1 = Intel (little-endian, start = LSB), 0 = Motorola (big-endian, start = MSB in
//   the "sawtooth" numbering where bit 7 of byte 0 is 7 and bit 0 of byte 1 is 8).
//   SIG_VALTYPE_ <id> <signal> : 1|2;   IEEE float / double
//   SG_MUL_VAL_ <id> <signal> <multiplexor> <lo>-<hi>, ...;   extended multiplexing
//   VAL_ <id> <signal> <value> "<text>" ... ;   BA_DEF_/BA_DEF_DEF_/BA_ attributes,
//   of which VFrameFormat (CAN FD) and GenMsgCycleTime (period in ms) are interpreted.
// Text is bytes: comments in cp1252 or any other encoding pass through unchanged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mbobserver/core/json_reader.hpp"

namespace mbo::io {

enum class ByteOrder : std::uint8_t { little_endian, big_endian };  // @1 Intel, @0 Motorola
enum class ValueType : std::uint8_t { integer, float32, float64 };  // SIG_VALTYPE_ 0, 1, 2

// A closed range of multiplexor raw values for which a signal is present.
struct MuxRange {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;
};

struct DbcAttribute {
  std::string name;
  std::string value;  // numbers as written, strings unquoted, ENUM indices resolved to text
};

struct DbcSignal {
  std::string name;
  std::uint16_t start_bit = 0;
  std::uint16_t length = 0;
  ByteOrder byte_order = ByteOrder::little_endian;
  bool is_signed = false;
  ValueType value_type = ValueType::integer;
  double factor = 1;
  double offset = 0;
  double minimum = 0;
  double maximum = 0;
  std::string unit;
  std::vector<std::string> receivers;
  // Multiplexing. After parsing, every multiplexed signal names its switch in `multiplexor`
  // and lists the switch values in `mux_ranges` (from SG_MUL_VAL_, or [n, n] from "m<n>").
  bool is_multiplexor = false;  // "M" or "m<n>M"
  std::optional<std::uint64_t> mux_value;  // "m<n>"
  std::string multiplexor;
  std::vector<MuxRange> mux_ranges;
  std::vector<std::pair<std::int64_t, std::string>> value_table;  // VAL_
  std::string comment;
  std::vector<DbcAttribute> attributes;
  std::size_t line = 0;

  bool multiplexed() const { return !multiplexor.empty(); }
};

struct DbcMessage {
  std::uint32_t id = 0;  // 11- or 29-bit identifier without flag bits
  bool extended = false;
  std::string name;
  std::uint8_t size = 0;  // payload bytes, 0..64
  bool fd = false;  // VFrameFormat *_CAN_FD, or size > 8
  std::string transmitter;
  std::vector<DbcSignal> signals;
  std::string comment;
  std::vector<DbcAttribute> attributes;
  std::optional<double> cycle_time_s;  // GenMsgCycleTime (ms in the file), if > 0
  std::size_t line = 0;

  const DbcSignal* find_signal(std::string_view signal_name) const;
};

struct DbcWarning {
  std::string file;  // the DBC file it is about
  std::size_t line = 0;
  std::string message;
  std::string text() const { return file + ":" + std::to_string(line) + ": " + message; }
};

// A message or signal left out of a forgiving load, and why (so that a configuration that maps
// it can say so).
struct DbcSkipped {
  std::string file;
  std::size_t line = 0;
  std::string message;  // its name, if it could be read
  std::string signal;  // empty: the whole message
  std::string reason;
};

// How a DBC is read. Forgiving (the default, like cantools' non-strict mode): a malformed
// message or signal is left out with one warning naming file, line and reason, and two vendor
// quirks are accepted with a warning (a 29-bit id written without bit 31 when it is > 0x7FF; a
// lone "m" multiplexer indicator read as "M"). Strict: each of these is a DbcError.
struct DbcOptions {
  bool strict = false;
};

struct Dbc {
  std::string file;  // the name used in messages
  std::string version;
  std::vector<std::string> nodes;
  std::vector<DbcMessage> messages;
  std::vector<DbcWarning> warnings;  // skipped statements, references to unknown objects
  std::vector<DbcSkipped> skipped;  // entries a forgiving load left out

  const DbcMessage* find(std::uint32_t id, bool extended) const;
  const DbcMessage* find(std::string_view message_name) const;
  // Why a message (or one of its signals) was left out; null when it was not.
  const DbcSkipped* skipped_entry(std::string_view message_name, std::string_view signal_name = {}) const;
};

// A DBC that cannot be used: "file:line: message". A ConfigError, so programs exit with 2.
class DbcError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// Parses DBC text; `name` is used in messages. What would make decoding wrong (a malformed
// BO_/SG_/SIG_VALTYPE_/SG_MUL_VAL_, an impossible layout, ambiguous multiplexing, a duplicate
// message id or signal name) leaves that message or signal out with a warning, or with
// `options.strict` throws DbcError; the rest (comments, attributes, unknown statements) is a
// warning either way.
Dbc parse_dbc(std::string_view text, const std::string& name, const DbcOptions& options = {});

// Reads and parses a file; an unreadable file is a DbcError too.
Dbc load_dbc(const std::filesystem::path& file, const DbcOptions& options = {});

// Merges several databases into one (for a bus described by more than one file); a message
// id or name defined twice keeps the first with a warning naming both files, or with
// `options.strict` is a DbcError.
Dbc merge_dbcs(std::vector<Dbc> parts, const DbcOptions& options = {});

}  // namespace mbo::io
