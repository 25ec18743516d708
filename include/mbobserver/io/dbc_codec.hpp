// Decoding and encoding of CAN payloads with a DBC. Every signal's layout is turned once into
// a byte offset, a shift and a mask, so decoding one signal is one unaligned 8-byte load, a
// shift and a mask (plus a ninth byte for the rare signal that straddles nine bytes); nothing
// is allocated per frame.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "mbobserver/io/dbc.hpp"

namespace mbo::io {

// One decoded signal. `raw` holds the signal's bits: sign-extended for signed integers (read
// it with raw_signed()), the IEEE bit pattern for float signals.
struct DecodedSignal {
  std::uint32_t index = 0;  // position in DbcMessage::signals
  std::uint64_t raw = 0;
  double value = 0;  // physical value: raw * factor + offset
  std::int64_t raw_signed() const { return static_cast<std::int64_t>(raw); }
};

// The precomputed layout of one signal.
struct SignalLayout {
  std::uint8_t first_byte = 0;  // lowest payload byte the 8-byte load starts at
  std::uint8_t shift = 0;  // little-endian: right shift; big-endian: left shift
  std::uint8_t length = 0;
  std::uint8_t end_byte = 0;  // payload bytes needed (one past the last byte used)
  bool big_endian = false;
  bool is_signed = false;
  bool wide = false;  // bit offset + length > 64: needs the ninth byte
  ValueType type = ValueType::integer;
  std::uint64_t mask = 0;
  double factor = 1;
  double offset = 0;
  std::int32_t mux_parent = -1;  // index of the switch signal, or -1
  std::uint32_t ranges_begin = 0, ranges_end = 0;  // into MessageCodec's range table
};

enum class EncodeStatus : std::uint8_t {
  ok,
  clamped,  // outside the raw range: the nearest representable value was written
  not_finite,  // NaN or infinite for an integer signal: nothing written
  no_room,  // payload shorter than the signal: nothing written
  bad_factor,  // factor 0: nothing written
};

// A payload copied into a zero-padded buffer, so that every signal is read with whole 8-byte
// loads whatever the frame's length. Make one per frame, then decode any number of signals.
struct PaddedPayload {
  explicit PaddedPayload(std::span<const std::uint8_t> data);
  alignas(8) std::array<std::uint8_t, 80> bytes{};
  std::size_t len = 0;
};

class MessageCodec {
 public:
  explicit MessageCodec(const DbcMessage& message);

  const DbcMessage& message() const { return *message_; }
  std::size_t signal_count() const { return layouts_.size(); }
  const SignalLayout& layout(std::size_t signal) const { return layouts_[signal]; }

  // Decodes one signal; false if the payload is too short for it or its multiplexor selects
  // another set of signals.
  bool decode(std::size_t signal, std::span<const std::uint8_t> data, DecodedSignal& out) const;
  bool decode(std::size_t signal, const PaddedPayload& data, DecodedSignal& out) const;

  // Decodes every signal present in the payload, in DBC order; `out` must hold
  // signal_count() entries. Returns how many were written.
  std::size_t decode_all(std::span<const std::uint8_t> data, std::span<DecodedSignal> out) const;

  // Writes the physical value (rounded to the nearest raw step, clamped to the raw range).
  EncodeStatus encode(std::size_t signal, double value, std::span<std::uint8_t> data) const;
  // Writes raw bits (truncated to the signal's length).
  EncodeStatus encode_raw(std::size_t signal, std::uint64_t raw, std::span<std::uint8_t> data) const;
  // Sets the multiplexor chain above `signal` (to the lowest value of each range) so that the
  // signal is present in the payload.
  void select(std::size_t signal, std::span<std::uint8_t> data) const;

  // Raw range of an integer signal, as doubles (exact up to 2^53).
  double raw_min(std::size_t signal) const;
  double raw_max(std::size_t signal) const;

 private:
  bool active(std::size_t signal, const PaddedPayload& data) const;

  const DbcMessage* message_;
  std::vector<SignalLayout> layouts_;
  std::vector<MuxRange> ranges_;
};

// All messages of a database, found by id in O(1).
class DbcCodec {
 public:
  explicit DbcCodec(Dbc dbc);
  DbcCodec(const DbcCodec&) = delete;
  DbcCodec& operator=(const DbcCodec&) = delete;
  DbcCodec(DbcCodec&&) = default;
  DbcCodec& operator=(DbcCodec&&) = default;

  const Dbc& dbc() const { return *dbc_; }
  const MessageCodec* find(std::uint32_t id, bool extended) const;
  const MessageCodec* find(std::string_view message_name) const;
  const std::vector<MessageCodec>& messages() const { return messages_; }

 private:
  std::unique_ptr<Dbc> dbc_;  // stable address: MessageCodecs point into it
  std::vector<MessageCodec> messages_;
  std::vector<std::uint16_t> standard_index_;  // 2048 entries, 0 = none, else index + 1
  std::vector<std::pair<std::uint32_t, std::uint32_t>> extended_index_;  // sorted (id, index)
};

}  // namespace mbo::io
