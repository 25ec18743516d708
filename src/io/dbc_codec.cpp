#include "mbobserver/io/dbc_codec.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

namespace mbo::io {

namespace {

static_assert(std::endian::native == std::endian::little, "the decoder's 8-byte loads assume a little-endian host");

inline std::uint64_t load_le64(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline std::uint64_t load_be64(const std::uint8_t* p) { return __builtin_bswap64(load_le64(p)); }

// The signal's bits, right-aligned and masked. `p` points at a PaddedPayload's bytes, so the
// load (first_byte + 9 <= 73 < 80) never leaves the buffer.
inline std::uint64_t extract(const SignalLayout& l, const std::uint8_t* p) {
  std::uint64_t v;
  if (!l.big_endian) {
    v = load_le64(p + l.first_byte) >> l.shift;
    if (l.wide) v |= std::uint64_t{p[l.first_byte + 8]} << (64 - l.shift);
  } else if (!l.wide) {
    v = (load_be64(p + l.first_byte) << l.shift) >> (64 - l.length);
  } else {
    // 72-bit window: the signal starts `shift` bits below its top.
    unsigned __int128 x = (static_cast<unsigned __int128>(load_be64(p + l.first_byte)) << 8) | p[l.first_byte + 8];
    v = static_cast<std::uint64_t>(x >> (72 - l.shift - l.length));
  }
  return v & l.mask;
}

inline std::uint64_t sign_extend(std::uint64_t v, unsigned length) {
  if (length >= 64) return v;
  const std::uint64_t sign = std::uint64_t{1} << (length - 1);
  return (v ^ sign) - sign;
}

inline double physical(const SignalLayout& l, std::uint64_t raw) {
  switch (l.type) {
    case ValueType::float32: {
      float f;
      auto bits = static_cast<std::uint32_t>(raw);
      std::memcpy(&f, &bits, 4);
      return static_cast<double>(f) * l.factor + l.offset;
    }
    case ValueType::float64: {
      double d;
      std::memcpy(&d, &raw, 8);
      return d * l.factor + l.offset;
    }
    case ValueType::integer:
      break;
  }
  const double r = l.is_signed ? static_cast<double>(static_cast<std::int64_t>(raw)) : static_cast<double>(raw);
  return r * l.factor + l.offset;
}

}  // namespace

PaddedPayload::PaddedPayload(std::span<const std::uint8_t> data) : len(std::min<std::size_t>(data.size(), 64)) {
  if (len > 0) std::memcpy(bytes.data(), data.data(), len);  // data() may be null when empty
}

MessageCodec::MessageCodec(const DbcMessage& message) : message_(&message) {
  layouts_.reserve(message.signals.size());
  for (const auto& s : message.signals) {
    SignalLayout l;
    l.length = static_cast<std::uint8_t>(s.length);
    l.mask = s.length >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << s.length) - 1;
    l.is_signed = s.is_signed;
    l.type = s.value_type;
    l.factor = s.factor;
    l.offset = s.offset;
    if (s.byte_order == ByteOrder::little_endian) {
      l.first_byte = static_cast<std::uint8_t>(s.start_bit / 8);
      l.shift = static_cast<std::uint8_t>(s.start_bit % 8);
      l.end_byte = static_cast<std::uint8_t>((s.start_bit + s.length - 1) / 8 + 1);
    } else {
      // Motorola: start_bit is the MSB in sawtooth numbering; count bits from the MSB of
      // byte 0 instead ("linear" big-endian index), where the signal is contiguous.
      const unsigned msb = (s.start_bit / 8u) * 8u + (7u - s.start_bit % 8u);
      l.big_endian = true;
      l.first_byte = static_cast<std::uint8_t>(msb / 8);
      l.shift = static_cast<std::uint8_t>(msb % 8);
      l.end_byte = static_cast<std::uint8_t>((msb + s.length - 1) / 8 + 1);
    }
    l.wide = l.shift + l.length > 64;
    if (s.multiplexed()) {
      for (std::size_t j = 0; j < message.signals.size(); ++j)
        if (message.signals[j].name == s.multiplexor) l.mux_parent = static_cast<std::int32_t>(j);
      l.ranges_begin = static_cast<std::uint32_t>(ranges_.size());
      ranges_.insert(ranges_.end(), s.mux_ranges.begin(), s.mux_ranges.end());
      l.ranges_end = static_cast<std::uint32_t>(ranges_.size());
    }
    layouts_.push_back(l);
  }
}

bool MessageCodec::active(std::size_t signal, const PaddedPayload& data) const {
  const SignalLayout& l = layouts_[signal];
  if (l.mux_parent < 0) return true;
  const auto parent = static_cast<std::size_t>(l.mux_parent);
  const SignalLayout& pl = layouts_[parent];
  if (pl.end_byte > data.len || !active(parent, data)) return false;
  std::uint64_t raw = extract(pl, data.bytes.data());
  if (pl.is_signed) {
    raw = sign_extend(raw, pl.length);
    if (static_cast<std::int64_t>(raw) < 0) return false;  // ranges are non-negative
  }
  for (std::uint32_t r = l.ranges_begin; r < l.ranges_end; ++r)
    if (raw >= ranges_[r].lo && raw <= ranges_[r].hi) return true;
  return false;
}

bool MessageCodec::decode(std::size_t signal, const PaddedPayload& data, DecodedSignal& out) const {
  const SignalLayout& l = layouts_[signal];
  if (l.end_byte > data.len || !active(signal, data)) return false;
  std::uint64_t raw = extract(l, data.bytes.data());
  if (l.is_signed && l.type == ValueType::integer) raw = sign_extend(raw, l.length);
  out.index = static_cast<std::uint32_t>(signal);
  out.raw = raw;
  out.value = physical(l, raw);
  return true;
}

bool MessageCodec::decode(std::size_t signal, std::span<const std::uint8_t> data, DecodedSignal& out) const {
  return decode(signal, PaddedPayload(data), out);
}

std::size_t MessageCodec::decode_all(std::span<const std::uint8_t> data, std::span<DecodedSignal> out) const {
  const PaddedPayload padded(data);
  std::size_t n = 0;
  for (std::size_t i = 0; i < layouts_.size() && n < out.size(); ++i)
    if (decode(i, padded, out[n])) ++n;
  return n;
}

double MessageCodec::raw_min(std::size_t signal) const {
  const SignalLayout& l = layouts_[signal];
  return l.is_signed ? -std::ldexp(1.0, l.length - 1) : 0.0;
}

double MessageCodec::raw_max(std::size_t signal) const {
  const SignalLayout& l = layouts_[signal];
  return l.is_signed ? std::ldexp(1.0, l.length - 1) - 1 : std::ldexp(1.0, l.length) - 1;
}

EncodeStatus MessageCodec::encode_raw(std::size_t signal, std::uint64_t raw, std::span<std::uint8_t> data) const {
  const SignalLayout& l = layouts_[signal];
  if (l.end_byte > data.size()) return EncodeStatus::no_room;
  const DbcSignal& s = message_->signals[signal];
  raw &= l.mask;
  // Bit by bit, in the DBC's own numbering: deliberately independent of the decoder's
  // word arithmetic, so that encode-then-decode tests check one against the other.
  const unsigned msb = (s.start_bit / 8u) * 8u + (7u - s.start_bit % 8u);
  for (unsigned i = 0; i < l.length; ++i) {
    unsigned byte, bit;
    if (!l.big_endian) {
      const unsigned pos = s.start_bit + i;
      byte = pos / 8;
      bit = pos % 8;
    } else {
      const unsigned lin = msb + l.length - 1 - i;  // bit i counted from the LSB
      byte = lin / 8;
      bit = 7 - lin % 8;
    }
    const auto m = static_cast<std::uint8_t>(1u << bit);
    if ((raw >> i) & 1u)
      data[byte] = static_cast<std::uint8_t>(data[byte] | m);
    else
      data[byte] = static_cast<std::uint8_t>(data[byte] & ~m);
  }
  return EncodeStatus::ok;
}

EncodeStatus MessageCodec::encode(std::size_t signal, double value, std::span<std::uint8_t> data) const {
  const SignalLayout& l = layouts_[signal];
  if (l.end_byte > data.size()) return EncodeStatus::no_room;
  if (l.factor == 0) return EncodeStatus::bad_factor;
  const double scaled = (value - l.offset) / l.factor;
  if (l.type == ValueType::float32) {
    const auto f = static_cast<float>(scaled);
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return encode_raw(signal, bits, data);
  }
  if (l.type == ValueType::float64) {
    std::uint64_t bits;
    std::memcpy(&bits, &scaled, 8);
    return encode_raw(signal, bits, data);
  }
  if (!std::isfinite(scaled)) return EncodeStatus::not_finite;
  const double r = std::nearbyint(scaled);
  std::uint64_t raw;
  EncodeStatus status = EncodeStatus::ok;
  if (l.is_signed) {
    const double half = std::ldexp(1.0, l.length - 1);  // exact power of two
    const std::int64_t hi =
        l.length >= 64 ? std::numeric_limits<std::int64_t>::max() : (std::int64_t{1} << (l.length - 1)) - 1;
    if (r < -half) {
      raw = static_cast<std::uint64_t>(-hi - 1);
      status = EncodeStatus::clamped;
    } else if (r >= half) {
      raw = static_cast<std::uint64_t>(hi);
      status = EncodeStatus::clamped;
    } else {
      raw = static_cast<std::uint64_t>(static_cast<std::int64_t>(r));
    }
  } else {
    const double full = std::ldexp(1.0, l.length);
    if (r < 0) {
      raw = 0;
      status = EncodeStatus::clamped;
    } else if (r >= full) {
      raw = l.mask;
      status = EncodeStatus::clamped;
    } else {
      raw = static_cast<std::uint64_t>(r);
    }
  }
  encode_raw(signal, raw, data);
  return status;
}

void MessageCodec::select(std::size_t signal, std::span<std::uint8_t> data) const {
  // Depth is bounded: the parser rejects cycles of multiplexors.
  std::size_t s = signal;
  while (layouts_[s].mux_parent >= 0) {
    const SignalLayout& l = layouts_[s];
    const auto parent = static_cast<std::size_t>(l.mux_parent);
    encode_raw(parent, ranges_[l.ranges_begin].lo, data);
    s = parent;
  }
}

DbcCodec::DbcCodec(Dbc dbc) : dbc_(std::make_unique<Dbc>(std::move(dbc))), standard_index_(2048, 0) {
  messages_.reserve(dbc_->messages.size());
  for (std::size_t i = 0; i < dbc_->messages.size(); ++i) {
    const DbcMessage& m = dbc_->messages[i];
    messages_.emplace_back(m);
    if (!m.extended) {
      if (standard_index_[m.id] == 0) standard_index_[m.id] = static_cast<std::uint16_t>(i + 1);
    } else {
      extended_index_.emplace_back(m.id, static_cast<std::uint32_t>(i));
    }
  }
  std::sort(extended_index_.begin(), extended_index_.end());
}

const MessageCodec* DbcCodec::find(std::uint32_t id, bool extended) const {
  if (!extended) {
    if (id >= 2048) return nullptr;
    const std::uint16_t k = standard_index_[id];
    return k ? &messages_[k - 1u] : nullptr;
  }
  auto it =
      std::lower_bound(extended_index_.begin(), extended_index_.end(), std::pair<std::uint32_t, std::uint32_t>{id, 0});
  if (it == extended_index_.end() || it->first != id) return nullptr;
  return &messages_[it->second];
}

const MessageCodec* DbcCodec::find(std::string_view message_name) const {
  for (const auto& m : messages_)
    if (m.message().name == message_name) return &m;
  return nullptr;
}

}  // namespace mbo::io
