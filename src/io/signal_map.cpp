#include "mbobserver/io/signal_map.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "mbobserver/io/units.hpp"

namespace mbo::io {

namespace {

bool is_counter(Channel c) {
  return c == Channel::wheel_count_fl || c == Channel::wheel_count_fr || c == Channel::wheel_count_rl ||
         c == Channel::wheel_count_rr;
}

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  std::size_t b = 0;
  while (b < s.size() && (s[b] == ' ' || s[b] == '\t')) ++b;
  return s.substr(b);
}

// The unit a mapping converts from, checked against the DBC and the channel; `dimension`
// receives the channel's dimension it delivers (a wheel speed: angular rate or speed).
double conversion(const JsonReader& entry, const DbcSignal& s, const std::string& qualified, Channel channel,
                  Dimension& dimension) {
  ChannelUnit cu = channel_unit(channel);
  const std::string dbc_unit = trimmed(s.unit);
  const std::optional<Unit> dbc_known = find_unit(dbc_unit);
  std::string declared = dbc_unit;
  if (entry.has("unit")) {
    declared = trimmed(entry.string("unit"));
    const std::optional<Unit> mine = find_unit(declared);
    if (!mine && !entry.has("scale"))
      entry.at("unit").fail("unknown unit \"" + declared + "\": give \"scale\" (factor to " + std::string(cu.name) +
                            ") instead, or one of: " + known_units(cu.dimension));
    if (mine && dbc_known && !dbc_unit.empty() &&
        (mine->dimension != dbc_known->dimension || mine->to_base != dbc_known->to_base))
      entry.at("unit").fail("unit \"" + declared + "\" disagrees with the DBC's \"" + dbc_unit + "\" for " + qualified);
  }
  // A channel with a second dimension (wheel speeds) takes the one its unit has.
  if (auto alt = alternative_channel_unit(channel)) {
    const std::optional<Unit> u = find_unit(declared);
    if (u && u->dimension == alt->dimension) cu = *alt;
  }
  dimension = cu.dimension;
  if (entry.has("scale")) {
    const double scale = entry.number_in("scale", -1e12, 1e12);
    if (find_unit(declared) && !(declared.empty() && cu.dimension == Dimension::count))
      entry.at("scale").fail("unit \"" + declared + "\" of " + qualified + " converts by itself: remove \"scale\"");
    if (scale == 0) entry.at("scale").fail("must not be 0");
    return scale;
  }
  if (declared.empty()) {
    if (cu.dimension == Dimension::count) return 1;
    entry.fail(qualified + " has no unit in the DBC: give \"unit\" (one of: " + known_units(cu.dimension) +
               ") or \"scale\" (factor to " + std::string(cu.name) + ")");
  }
  const std::optional<Unit> u = find_unit(declared);
  if (!u)
    entry.fail("unknown unit \"" + declared + "\" of " + qualified + " in the DBC: give \"unit\" (one of: " +
               known_units(cu.dimension) + ") or \"scale\" (factor to " + std::string(cu.name) + ")");
  if (u->dimension != cu.dimension)
    entry.fail("unit \"" + declared + "\" of " + qualified + " is " + std::string(dimension_name(u->dimension)) + ", " +
               std::string(channel_name(channel)) + " needs " + std::string(dimension_name(cu.dimension)) + " (" +
               std::string(cu.name) + ")");
  return u->to_base / cu.to_base;
}

// One set of DBC files (the top-level "dbc" or an interface's), merged.
std::unique_ptr<DbcCodec> load_database(const JsonReader& dbc_node, const JsonReader& can, const DbcOptions& options,
                                        std::vector<std::string>& warnings,
                                        std::map<std::string, std::string>& message_file) {
  std::vector<Dbc> dbcs;
  std::vector<JsonReader> dbc_entries;
  if (dbc_node.is_array()) {
    dbc_entries = dbc_node.items();
    if (dbc_entries.empty()) dbc_node.fail("expected at least one DBC file");
  } else {
    dbc_entries.push_back(dbc_node);
  }
  for (const auto& e : dbc_entries) {
    if (!e.is_string()) e.fail("expected a path to a DBC file");
    std::filesystem::path p = e.as_string();
    if (p.is_relative()) p = can.directory() / p;
    try {
      dbcs.push_back(load_dbc(p, options));
    } catch (const DbcError& err) {
      e.fail(err.what());
    }
  }
  // Which file each message comes from, for messages naming a DBC line (the first, as merged).
  for (const auto& d : dbcs)
    for (const auto& msg : d.messages) message_file.emplace(msg.name, d.file);
  Dbc merged;
  try {
    merged = merge_dbcs(std::move(dbcs), options);
  } catch (const DbcError& err) {
    dbc_node.fail(err.what());
  }
  for (const auto& w : merged.warnings) warnings.push_back(w.text());
  return std::make_unique<DbcCodec>(std::move(merged));
}

}  // namespace

SignalMap SignalMap::from_config(const JsonReader& can) {
  SignalMap map;
  DbcOptions options;
  options.strict = can.boolean("strict", false);
  // per database: the DBC file each message comes from
  std::vector<std::map<std::string, std::string>> message_files;
  // Database 0: the top-level DBC files (required unless every interface has its own).
  if (can.has("dbc")) {
    map.databases_.push_back(load_database(can.at("dbc"), can, options, map.warnings_, message_files.emplace_back()));
  } else {
    map.databases_.push_back(std::make_unique<DbcCodec>(Dbc{}));
    message_files.emplace_back();
  }

  if (auto ifs = can.find("interfaces")) {
    for (const auto& i : ifs->items()) {
      CanInterfaceConfig c;
      c.name = i.string("name");
      if (c.name.empty() || c.name.size() > 15) i.at("name").fail("must be 1..15 characters (IFNAMSIZ)");
      for (const auto& o : map.interfaces_)
        if (o.name == c.name) i.at("name").fail("interface \"" + c.name + "\" is listed twice");
      c.fd = i.boolean("fd", false);
      c.restart_bus_off = i.boolean("restart_bus_off", false);
      c.reconnect_initial_s = i.positive_up_to("reconnect_initial_s", 3600, 0.1);
      c.reconnect_max_s = i.positive_up_to("reconnect_max_s", 3600, 5.0);
      if (c.reconnect_max_s < c.reconnect_initial_s) i.at("reconnect_max_s").fail("must be >= reconnect_initial_s");
      c.state_poll_s = i.positive_up_to("state_poll_s", 3600, 1.0);
      std::size_t db = 0;
      if (i.has("dbc")) {
        c.own_dbc = true;
        map.databases_.push_back(load_database(i.at("dbc"), can, options, map.warnings_, message_files.emplace_back()));
        db = map.databases_.size() - 1;
      }
      i.finish();
      map.interfaces_.push_back(std::move(c));
      map.interface_database_.push_back(db);
    }
  }
  if (!can.has("dbc")) {
    bool all_own = !map.interfaces_.empty();
    for (const auto& c : map.interfaces_) all_own = all_own && c.own_dbc;
    if (!all_own) can.at("dbc").fail("required (or a \"dbc\" on every interface)");
  }

  JsonReader signals = can.at("signals");
  if (!signals.is_object()) signals.fail("expected an object of channel: {signal: ...}");
  for (const std::string& key : signals.keys()) {
    JsonReader entry = signals.at(key);
    const std::optional<Channel> channel = channel_from_name(key);
    if (!channel) {
      std::string names;
      for (auto n : kChannelNames) names += (names.empty() ? "" : ", ") + std::string(n);
      entry.fail("unknown channel \"" + key + "\" (expected one of: " + names + ")");
    }
    const std::string qualified = entry.string("signal");
    const auto dot = qualified.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == qualified.size())
      entry.at("signal").fail("expected \"Message.Signal\", got \"" + qualified + "\"");
    SignalMapping m;
    m.channel = *channel;
    m.message = qualified.substr(0, dot);
    m.signal = qualified.substr(dot + 1);
    m.where = entry.where();
    if (entry.has("bus")) {
      const std::string bus = entry.string("bus");
      m.bus = map.bus_index(bus);
      if (m.bus < 0) entry.at("bus").fail("no interface \"" + bus + "\" in /can/interfaces");
      m.database = map.interface_database_[static_cast<std::size_t>(m.bus)];
    }
    const DbcCodec& codec = *map.databases_[m.database];
    const std::string& files = codec.dbc().file;
    m.codec = codec.find(m.message);
    if (!m.codec) {
      if (const DbcSkipped* k = codec.dbc().skipped_entry(m.message))
        entry.at("signal").fail("message \"" + m.message + "\" was left out of " + k->file + " (line " +
                                std::to_string(k->line) + ": " + k->reason + ")");
      entry.at("signal").fail("no message \"" + m.message + "\" in " + (files.empty() ? "the DBC files" : files));
    }
    const DbcSignal* s = m.codec->message().find_signal(m.signal);
    if (!s) {
      if (const DbcSkipped* k = codec.dbc().skipped_entry(m.message, m.signal))
        entry.at("signal").fail("signal " + qualified + " was left out of " + k->file + " (line " +
                                std::to_string(k->line) + ": " + k->reason + ")");
      entry.at("signal").fail("message " + m.message + " has no signal \"" + m.signal + "\" in " + files);
    }
    m.signal_index = static_cast<std::size_t>(s - m.codec->message().signals.data());
    {
      // What a DBC can say that no frame could carry: the mapping would never give a value.
      const DbcMessage& msg = m.codec->message();
      const auto& mf = message_files[m.database];
      const auto file = mf.find(m.message);
      const std::string at =
          (file == mf.end() ? files : file->second) + ":" + std::to_string(s->line) + ": " + qualified;
      const SignalLayout& l = m.codec->layout(m.signal_index);
      if (l.end_byte > msg.size)
        entry.at("signal").fail(at + " (start bit " + std::to_string(s->start_bit) + ", " + std::to_string(s->length) +
                                " bits, " + (l.big_endian ? "big" : "little") + "-endian) needs " +
                                std::to_string(l.end_byte) + " bytes: it does not fit its " + std::to_string(msg.size) +
                                "-byte message");
      if (s->factor == 0) entry.at("signal").fail(at + " has factor 0: every raw value would decode to its offset");
      if (!std::isfinite(s->factor) || !std::isfinite(s->offset))
        entry.at("signal").fail(at + " has a factor or offset that is not a finite number");
    }
    if (s->minimum < s->maximum) {
      const double half_step = s->value_type == ValueType::integer ? 0.5 * std::abs(s->factor) : 0.0;
      m.minimum = s->minimum - half_step;
      m.maximum = s->maximum + half_step;
      // A counter passes through its limits as it wraps; any other signal that sits on one is
      // saturated or glitched (a steering angle at the DBC's 65.534 deg). A limit of zero is
      // an unsigned quantity's rest (no brake pressure, standing still): no flag there.
      if (!is_counter(*channel)) {
        if (s->minimum != 0) m.limit_low = s->minimum + half_step;
        if (s->maximum != 0) m.limit_high = s->maximum - half_step;
      }
    }
    if (is_counter(*channel)) {
      if (s->value_type != ValueType::integer || s->is_signed || s->factor != 1 || s->offset != 0)
        entry.at("signal").fail(qualified +
                                " cannot be a wheel counter: it must be an unsigned integer "
                                "with factor 1 and offset 0");
      if (s->length > 53) entry.at("signal").fail(qualified + ": counters wider than 53 bits are not supported");
      const std::uint64_t full = std::uint64_t{1} << s->length;
      m.counter_modulus = full;
      if (entry.has("modulus"))
        m.counter_modulus = static_cast<std::uint64_t>(entry.integer("modulus", 2, static_cast<long long>(full)));
      if (entry.has("unit")) {
        const std::string u = trimmed(entry.string("unit"));
        auto known = find_unit(u);
        if (!u.empty() && (!known || known->dimension != Dimension::count))
          entry.at("unit").fail("a wheel counter counts teeth: unit \"" + u + "\" is not a count");
      } else if (auto u = trimmed(s->unit); !u.empty()) {
        auto known = find_unit(u);
        if (known && known->dimension != Dimension::count)
          entry.at("signal").fail(qualified + " has unit \"" + u + "\", not a count");
      }
      m.scale = 1;
      m.dimension = Dimension::count;
      m.quantum = 1;
    } else {
      m.scale = conversion(entry, *s, qualified, *channel, m.dimension);
      if (entry.boolean("invert", false)) m.scale = -m.scale;
      m.quantum = s->value_type == ValueType::integer ? std::abs(s->factor * m.scale) : 0.0;
    }
    entry.finish();
    map.mappings_.push_back(std::move(m));
  }
  signals.finish();
  can.finish();
  map.index();
  return map;
}

int SignalMap::bus_index(std::string_view interface) const {
  for (std::size_t i = 0; i < interfaces_.size(); ++i)
    if (interfaces_[i].name == interface) return static_cast<int>(i);
  return -1;
}

std::size_t SignalMap::database_of(const CanFrame& frame) const {
  return frame.channel < interface_database_.size() ? interface_database_[frame.channel] : 0;
}

bool SignalMap::known(const CanFrame& frame) const {
  return databases_[database_of(frame)]->find(frame.id, frame.extended) != nullptr;
}

void SignalMap::index() {
  by_message_.assign(databases_.size(), {});
  for (std::size_t d = 0; d < databases_.size(); ++d) by_message_[d].assign(databases_[d]->messages().size(), {});
  for (std::size_t i = 0; i < mappings_.size(); ++i) {
    const auto& msgs = databases_[mappings_[i].database]->messages();
    auto& list = by_message_[mappings_[i].database][static_cast<std::size_t>(mappings_[i].codec - msgs.data())];
    list.push_back(i);
    max_per_frame_ = std::max(max_per_frame_, list.size());
  }
  // One TxFrame per (message, multiplexor selection): the chain of (switch, value) pairs
  // above the signal.
  std::vector<std::vector<std::pair<std::int32_t, std::uint64_t>>> chains;
  for (std::size_t i = 0; i < mappings_.size(); ++i) {
    const SignalMapping& m = mappings_[i];
    std::vector<std::pair<std::int32_t, std::uint64_t>> chain;
    for (std::size_t s = m.signal_index; m.codec->layout(s).mux_parent >= 0;) {
      const auto& l = m.codec->layout(s);
      chain.emplace_back(l.mux_parent, m.codec->message().signals[s].mux_ranges.front().lo);
      s = static_cast<std::size_t>(l.mux_parent);
    }
    bool placed = false;
    for (std::size_t t = 0; t < tx_frames_.size() && !placed; ++t)
      if (tx_frames_[t].codec == m.codec && tx_frames_[t].bus == m.bus && chains[t] == chain) {
        tx_frames_[t].mappings.push_back(i);
        placed = true;
      }
    if (!placed) {
      tx_frames_.push_back({m.codec, m.bus, {i}, m.codec->message().cycle_time_s});
      chains.push_back(std::move(chain));
    }
  }
}

const SignalMapping* SignalMap::mapping(Channel c) const {
  for (const auto& m : mappings_)
    if (m.channel == c) return &m;
  return nullptr;
}

std::optional<std::uint64_t> SignalMap::counter_modulus(Channel c) const {
  const SignalMapping* m = mapping(c);
  return m ? m->counter_modulus : std::nullopt;
}

std::vector<CanId> SignalMap::filter_ids(int bus) const {
  std::vector<CanId> ids;
  for (const auto& m : mappings_) {
    if (bus >= 0) {
      const bool on_it = m.bus >= 0 ? m.bus == bus : interface_database_[static_cast<std::size_t>(bus)] == 0;
      if (!on_it) continue;
    }
    CanId id{m.codec->message().id, m.codec->message().extended};
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
  }
  return ids;
}

std::size_t SignalMap::decode(const CanFrame& frame, std::span<Measurement> out) const {
  if (frame.error || frame.remote) return 0;
  const std::size_t db = database_of(frame);
  const MessageCodec* mc = databases_[db]->find(frame.id, frame.extended);
  if (!mc) return 0;
  const auto& list = by_message_[db][static_cast<std::size_t>(mc - databases_[db]->messages().data())];
  if (list.empty()) return 0;
  const PaddedPayload payload(std::span(frame.data.data(), frame.len));
  std::size_t n = 0;
  for (std::size_t i : list) {
    if (n == out.size()) break;
    const SignalMapping& m = mappings_[i];
    if (m.bus >= 0 && m.bus != frame.channel) continue;  // the same database on another interface
    DecodedSignal d;
    double value = std::numeric_limits<double>::quiet_NaN();  // a short frame: not there
    if (mc->layout(m.signal_index).end_byte <= frame.len) {
      if (!mc->decode(m.signal_index, payload, d)) continue;  // multiplexed out
      if (d.value >= m.minimum && d.value <= m.maximum) value = d.value * m.scale;
    }
    const bool at_limit = !std::isnan(value) && (d.value <= m.limit_low || d.value >= m.limit_high);
    out[n++] = Measurement{frame.t, m.channel, value, at_limit ? kAtLimit : std::uint8_t{0}};
  }
  return n;
}

bool SignalMap::encode(const TxFrame& tx, const std::array<double, kChannelCount>& values, double t,
                       CanFrame& out) const {
  out = CanFrame{};
  const DbcMessage& msg = tx.codec->message();
  out.t = t;
  out.id = msg.id;
  out.extended = msg.extended;
  out.fd = msg.fd;
  out.len = msg.size;
  std::span<std::uint8_t> data(out.data.data(), msg.size);
  bool exact = true;
  for (std::size_t i : tx.mappings) {
    const SignalMapping& m = mappings_[i];
    double v = values[static_cast<std::size_t>(m.channel)];
    if (m.counter_modulus) {
      const auto mod = static_cast<double>(*m.counter_modulus);
      v = std::fmod(std::floor(v), mod);
      if (v < 0) v += mod;
    } else {
      v /= m.scale;
    }
    tx.codec->select(m.signal_index, data);
    if (tx.codec->encode(m.signal_index, v, data) != EncodeStatus::ok) exact = false;
  }
  return exact;
}

}  // namespace mbo::io
