#include "mbobserver/io/dbc.hpp"

#include "mbobserver/core/input_file.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <unordered_map>

namespace mbo::io {

const DbcSignal* DbcMessage::find_signal(std::string_view signal_name) const {
  for (const auto& s : signals)
    if (s.name == signal_name) return &s;
  return nullptr;
}

const DbcMessage* Dbc::find(std::uint32_t id, bool extended) const {
  for (const auto& m : messages)
    if (m.id == id && m.extended == extended) return &m;
  return nullptr;
}

const DbcMessage* Dbc::find(std::string_view message_name) const {
  for (const auto& m : messages)
    if (m.name == message_name) return &m;
  return nullptr;
}

const DbcSkipped* Dbc::skipped_entry(std::string_view message_name, std::string_view signal_name) const {
  for (const auto& s : skipped)
    if (s.message == message_name && (s.signal.empty() || s.signal == signal_name)) return &s;
  return nullptr;
}

namespace {

constexpr std::uint32_t kExtendedFlag = 0x80000000u;
constexpr std::uint32_t kIndependentSignalsId = 0xC0000000u;  // CANdb++'s pseudo message

// Keywords that can start a statement; used to resynchronise after a statement we skip.
constexpr std::string_view kKeywords[] = {"VERSION",
                                          "NS_",
                                          "NS_DESC_",
                                          "BS_",
                                          "BU_",
                                          "BO_",
                                          "SG_",
                                          "CM_",
                                          "BA_DEF_",
                                          "BA_DEF_DEF_",
                                          "BA_",
                                          "VAL_",
                                          "VAL_TABLE_",
                                          "SIG_VALTYPE_",
                                          "SG_MUL_VAL_",
                                          "EV_",
                                          "ENVVAR_DATA_",
                                          "SGTYPE_",
                                          "SGTYPE_VAL_",
                                          "SIG_GROUP_",
                                          "BO_TX_BU_",
                                          "BA_DEF_REL_",
                                          "BA_REL_",
                                          "BA_DEF_DEF_REL_",
                                          "BU_SG_REL_",
                                          "BU_EV_REL_",
                                          "BU_BO_REL_",
                                          "CAT_DEF_",
                                          "CAT_",
                                          "FILTER",
                                          "BA_DEF_SGTYPE_",
                                          "BA_SGTYPE_",
                                          "SIG_TYPE_REF_",
                                          "SIGTYPE_VALTYPE_"};

// Statements that never affect decoding: skipped without a warning.
constexpr std::string_view kIgnored[] = {
    "NS_DESC_",  "VAL_TABLE_",  "EV_",     "ENVVAR_DATA_",    "SGTYPE_",    "SGTYPE_VAL_",   "SIG_GROUP_",
    "BO_TX_BU_", "BA_DEF_REL_", "BA_REL_", "BA_DEF_DEF_REL_", "BU_SG_REL_", "BU_EV_REL_",    "BU_BO_REL_",
    "CAT_DEF_",  "CAT_",        "FILTER",  "BA_DEF_SGTYPE_",  "BA_SGTYPE_", "SIG_TYPE_REF_", "SIGTYPE_VALTYPE_"};

bool is_keyword(std::string_view w) {
  return std::find(std::begin(kKeywords), std::end(kKeywords), w) != std::end(kKeywords);
}
bool is_ignored(std::string_view w) {
  return std::find(std::begin(kIgnored), std::end(kIgnored), w) != std::end(kIgnored);
}

bool is_word_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

// A problem inside a statement that does not affect decoding: becomes a warning.
struct SoftError {
  std::string message;
};

// A malformed message or signal in a forgiving load: the entry is left out with a warning.
struct EntryError {
  std::string message;
};

struct AttrDef {
  std::string name;
  std::string object;  // "", "BU_", "BO_", "SG_", "EV_"
  std::string type;  // INT, HEX, FLOAT, STRING, ENUM
  std::vector<std::string> enums;
  std::optional<std::string> default_value;
};

class Parser {
 public:
  Parser(std::string_view text, const std::string& name, Dbc& db, const DbcOptions& options)
      : t_(text), name_(name), db_(db), opt_(options) {}

  void run() {
    while (true) {
      skip_ws();
      if (at_end()) break;
      const std::size_t start = p_, start_line = line_;
      stmt_line_ = line_;
      std::string_view kw = word();
      if (kw.empty()) {
        warn("unexpected character '" + printable(t_[p_]) + "': line skipped");
        skip_line();
        continue;
      }
      if (kw != "SG_") current_ = npos;
      entry_message_.clear();
      entry_signal_.clear();
      entry_id_.reset();
      try {
        dispatch(kw);
      } catch (const SoftError& e) {
        warn(std::string(kw) + ": " + e.message + ": statement skipped");
        p_ = start;
        line_ = start_line;
        word();
        skip_statement();
      } catch (const EntryError& e) {
        skip_entry(kw, e.message, start, start_line);
      }
    }
    finish();
  }

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  // ---- diagnostics
  // What makes a message or signal unusable: strict, the load fails; forgiving, the entry is
  // left out (run() catches EntryError).
  [[noreturn]] void error(const std::string& message) const {
    if (!opt_.strict) throw EntryError{message};
    throw DbcError(name_ + ":" + std::to_string(stmt_line_) + ": " + message);
  }
  // A vendor quirk: accepted with a warning, an error when strict.
  void quirk(const std::string& message, const std::string& strict_message) {
    if (opt_.strict) throw DbcError(name_ + ":" + std::to_string(stmt_line_) + ": " + strict_message);
    warn(message);
  }
  // Leaves out the entry whose statement failed (forgiving): a message with its signals, a
  // signal, or the signal a SIG_VALTYPE_ / SG_MUL_VAL_ is about (decoding it without its value
  // type or multiplexing would be wrong).
  void skip_entry(std::string_view kw, const std::string& reason, std::size_t start, std::size_t start_line) {
    if (kw == "BO_") {
      current_ = npos;
      skipping_signals_ = true;  // its SG_ lines go with it
      if (entry_id_) skipped_ids_.push_back(*entry_id_);
      db_.skipped.push_back({name_, stmt_line_, entry_message_, "", reason});
      warn(reason + ": message " + (entry_message_.empty() ? std::string("(unnamed)") : entry_message_) +
           " and its signals left out");
      skip_line();
      return;
    }
    if (kw == "SG_") {
      const std::string msg = current_ == npos ? std::string() : db_.messages[current_].name;
      if (current_ != npos) skipped_signals_.emplace_back(db_.messages[current_].line, entry_signal_);
      db_.skipped.push_back({name_, stmt_line_, msg, entry_signal_.empty() ? "(unnamed)" : entry_signal_, reason});
      warn(reason + ": signal " + (msg.empty() ? "" : msg + ".") + entry_signal_ + " left out");
      skip_line();
      return;
    }
    // SIG_VALTYPE_ / SG_MUL_VAL_: the signal it names, if it can be found, goes.
    std::string what = "statement skipped";
    if (entry_id_ && !entry_signal_.empty()) {
      if (DbcMessage* m = message_by_raw_id(*entry_id_)) {
        what = "signal " + m->name + "." + entry_signal_ + " left out";
        drop_signal(*m, entry_signal_, stmt_line_, reason);
      }
    }
    warn(reason + ": " + what);
    p_ = start;
    line_ = start_line;
    word();
    skip_statement();
  }
  void drop_signal(DbcMessage& m, const std::string& signal, std::size_t line, const std::string& reason) {
    for (std::size_t i = 0; i < m.signals.size(); ++i)
      if (m.signals[i].name == signal) {
        m.signals.erase(m.signals.begin() + static_cast<std::ptrdiff_t>(i));
        skipped_signals_.emplace_back(m.line, signal);
        db_.skipped.push_back({name_, line, m.name, signal, reason});
        return;
      }
  }
  // Statements about an entry that was left out say nothing more (its one warning was given).
  bool left_out(std::uint64_t raw_id, std::string_view signal = {}) const {
    if (std::find(skipped_ids_.begin(), skipped_ids_.end(), raw_id) != skipped_ids_.end()) return true;
    if (signal.empty()) return false;
    auto it = by_id_.find(static_cast<std::uint32_t>(raw_id));
    if (it == by_id_.end()) return false;
    const std::size_t line = db_.messages[it->second].line;
    for (const auto& [l, s] : skipped_signals_)
      if (l == line && s == signal) return true;
    return false;
  }
  [[noreturn]] void error_at(std::size_t line, const std::string& message) const {
    throw DbcError(name_ + ":" + std::to_string(line) + ": " + message);
  }
  void warn(std::string message) { db_.warnings.push_back({name_, stmt_line_, std::move(message)}); }
  static std::string hex_id(std::uint32_t id) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%X", id);
    return buf;
  }
  static std::string printable(char c) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) return std::string(1, c);
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", u);
    return buf;
  }

  // ---- characters
  bool at_end() const { return p_ >= t_.size(); }
  // Length of the newline at p (LF, CRLF or a lone CR, which some files use), else 0.
  std::size_t newline_at(std::size_t p) const {
    if (p >= t_.size()) return 0;
    if (t_[p] == '\n') return 1;
    if (t_[p] == '\r') return (p + 1 < t_.size() && t_[p + 1] == '\n') ? 2 : 1;
    return 0;
  }
  bool at_eol() const { return at_end() || newline_at(p_) != 0; }
  void skip_blanks() {
    while (!at_end() && newline_at(p_) == 0 && (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\f' || t_[p_] == '\v'))
      ++p_;
  }
  void skip_ws() {
    while (!at_end()) {
      if (std::size_t n = newline_at(p_)) {
        p_ += n;
        ++line_;
      } else if (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\f' || t_[p_] == '\v') {
        ++p_;
      } else {
        break;
      }
    }
  }
  void skip_line() {
    while (!at_end() && newline_at(p_) == 0) ++p_;
  }
  std::string_view word() {
    std::size_t b = p_;
    while (!at_end() && is_word_char(t_[p_])) ++p_;
    return t_.substr(b, p_ - b);
  }
  char peek() const { return at_end() ? '\0' : t_[p_]; }

  template <class Fail>
  void expect(char c, const char* what, Fail fail) {
    skip_blanks();
    if (peek() != c) fail(std::string("expected '") + c + "' " + what);
    ++p_;
  }

  // Numbers as DBC writers print them: "-1", "0.5", "1E-005", "+3".
  std::string_view number_lexeme() {
    skip_blanks();
    std::size_t b = p_;
    if (peek() == '+' || peek() == '-') ++p_;
    while (!at_end() && ((t_[p_] >= '0' && t_[p_] <= '9') || t_[p_] == '.')) ++p_;
    if (!at_end() && (t_[p_] == 'e' || t_[p_] == 'E')) {
      std::size_t q = p_ + 1;
      if (q < t_.size() && (t_[q] == '+' || t_[q] == '-')) ++q;
      if (q < t_.size() && t_[q] >= '0' && t_[q] <= '9') {
        p_ = q;
        while (!at_end() && t_[p_] >= '0' && t_[p_] <= '9') ++p_;
      }
    }
    return t_.substr(b, p_ - b);
  }
  std::optional<double> try_double() {
    std::string_view s = number_lexeme();
    if (!s.empty() && s[0] == '+') s.remove_prefix(1);
    double v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
    return v;
  }
  std::optional<std::uint64_t> try_uint() {
    skip_blanks();
    std::size_t b = p_;
    while (!at_end() && t_[p_] >= '0' && t_[p_] <= '9') ++p_;
    std::uint64_t v = 0;
    auto r = std::from_chars(t_.data() + b, t_.data() + p_, v);
    if (p_ == b || r.ec != std::errc()) return std::nullopt;
    return v;
  }
  std::optional<std::int64_t> try_int() {
    skip_blanks();
    std::size_t b = p_;
    if (peek() == '-' || peek() == '+') ++p_;
    while (!at_end() && t_[p_] >= '0' && t_[p_] <= '9') ++p_;
    std::string_view s = t_.substr(b, p_ - b);
    if (!s.empty() && s[0] == '+') s.remove_prefix(1);
    std::int64_t v = 0;
    auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
    return v;
  }
  // "text" with \" and \\ escapes; may span lines.
  std::optional<std::string> try_string() {
    skip_blanks();
    if (peek() != '"') return std::nullopt;
    ++p_;
    std::string out;
    while (!at_end()) {
      char c = t_[p_];
      if (c == '"') {
        ++p_;
        return out;
      }
      if (c == '\\' && p_ + 1 < t_.size() && (t_[p_ + 1] == '"' || t_[p_ + 1] == '\\')) {
        out += t_[p_ + 1];
        p_ += 2;
        continue;
      }
      if (std::size_t n = newline_at(p_)) {
        out.append(t_.substr(p_, n));
        p_ += n;
        ++line_;
        continue;
      }
      out += c;
      ++p_;
    }
    return std::nullopt;  // unterminated
  }

  // Skips to the end of a statement: its ';', or the start of the next line that begins with
  // a keyword (statements such as BS_ have no terminator).
  void skip_statement() {
    while (!at_end()) {
      char c = t_[p_];
      if (c == ';') {
        ++p_;
        return;
      }
      if (c == '"') {
        std::size_t save_p = p_, save_line = line_;
        if (!try_string()) {  // unterminated string: give up on this line only
          p_ = save_p;
          line_ = save_line;
          skip_line();
        }
        continue;
      }
      if (std::size_t n = newline_at(p_)) {
        p_ += n;
        ++line_;
        std::size_t q = p_;
        while (q < t_.size() && (t_[q] == ' ' || t_[q] == '\t')) ++q;
        std::size_t e = q;
        while (e < t_.size() && is_word_char(t_[e])) ++e;
        if (is_keyword(t_.substr(q, e - q))) return;
        continue;
      }
      ++p_;
    }
  }

  // ---- statements
  void dispatch(std::string_view kw) {
    if (kw == "VERSION") {
      if (auto s = try_string()) db_.version = *s;
      skip_line();
    } else if (kw == "NS_") {
      skip_line();
      skip_symbol_list();
    } else if (kw == "BS_") {
      skip_line();
    } else if (kw == "BU_") {
      skip_blanks();
      if (peek() == ':') ++p_;
      while (true) {
        skip_blanks();
        if (at_eol()) break;
        std::string_view w = word();
        if (w.empty()) {
          ++p_;
          continue;
        }
        db_.nodes.emplace_back(w);
      }
      // Some writers put one node per line under "BU_:" (opendbc's tesla_powertrain.dbc):
      // take following lines made of names only, up to a blank line or a keyword.
      while (true) {
        std::size_t save_p = p_, save_line = line_;
        if (std::size_t n = newline_at(p_)) {
          p_ += n;
          ++line_;
        }
        skip_blanks();
        std::vector<std::string_view> names;
        while (!at_eol()) {
          std::string_view w = word();
          if (w.empty()) break;
          names.push_back(w);
          skip_blanks();
        }
        if (names.empty() || !at_eol() || is_keyword(names.front())) {
          p_ = save_p;
          line_ = save_line;
          break;
        }
        for (auto n : names) db_.nodes.emplace_back(n);
      }
    } else if (kw == "BO_") {
      parse_message();
    } else if (kw == "SG_") {
      parse_signal();
    } else if (kw == "CM_") {
      parse_comment();
    } else if (kw == "BA_DEF_") {
      parse_attribute_definition();
    } else if (kw == "BA_DEF_DEF_") {
      parse_attribute_default();
    } else if (kw == "BA_") {
      parse_attribute();
    } else if (kw == "VAL_") {
      parse_value_table();
    } else if (kw == "SIG_VALTYPE_") {
      parse_valtype();
    } else if (kw == "SG_MUL_VAL_") {
      parse_mux_values();
    } else if (is_ignored(kw)) {
      skip_statement();
    } else {
      warn("unknown statement " + std::string(kw) + ": skipped");
      skip_statement();
    }
  }

  // The NS_ block: one symbol per line, usually indented. Ends at the first line that is
  // not a single word.
  void skip_symbol_list() {
    while (!at_end()) {
      std::size_t save_p = p_, save_line = line_;
      if (std::size_t n = newline_at(p_)) {
        p_ += n;
        ++line_;
      }
      skip_blanks();
      if (at_eol()) {
        if (at_end()) return;
        continue;  // blank line inside the list
      }
      std::string_view w = word();
      skip_blanks();
      if (w.empty() || !at_eol() || w == "BS_" || w == "BU_" || w == "BO_") {
        p_ = save_p;
        line_ = save_line;
        return;
      }
    }
  }

  void parse_message() {
    auto fail = [this](const std::string& m) { error("BO_: " + m); };
    auto raw = try_uint();
    if (!raw || *raw > 0xFFFFFFFFu) fail("expected a message id (decimal, 0..4294967295)");
    entry_id_ = *raw;
    skip_blanks();
    std::string_view name = word();
    if (name.empty()) fail("expected a message name");
    entry_message_ = std::string(name);
    expect(':', "after the message name", fail);
    auto size = try_uint();
    if (!size) fail("expected the payload size in bytes");
    if (*size > 64) fail("payload size " + std::to_string(*size) + " > 64 bytes");
    skip_blanks();
    std::string_view tx = word();

    const auto raw_id = static_cast<std::uint32_t>(*raw);
    if (raw_id == kIndependentSignalsId || name == "VECTOR__INDEPENDENT_SIG_MSG") {
      // Holds signals not assigned to any message; never on the bus.
      current_ = npos;
      skipping_signals_ = true;
      return;
    }
    skipping_signals_ = false;
    DbcMessage m;
    m.extended = (raw_id & kExtendedFlag) != 0;
    m.id = raw_id & 0x1FFFFFFFu;
    if (m.extended && (raw_id & 0x60000000u) != 0)
      fail("id " + std::to_string(raw_id) + " has bits 29/30 set besides the extended flag");
    if (!m.extended && m.id > 0x7FF) {
      // Some writers leave out bit 31 of a 29-bit id (cantools reads them as extended too).
      const std::string strict_message =
          "BO_: standard id " + std::to_string(m.id) + " > 2047 (29-bit ids have bit 31 set: id + 2147483648)";
      if (raw_id > 0x1FFFFFFFu) fail(strict_message.substr(5));
      quirk("BO_: id " + std::to_string(raw_id) + " of " + std::string(name) +
                " is > 2047 without bit 31: read as the 29-bit id " + hex_id(raw_id),
            strict_message);
      m.extended = true;
    }
    m.name = std::string(name);
    m.size = static_cast<std::uint8_t>(*size);
    m.transmitter = std::string(tx);
    m.line = stmt_line_;
    // Other statements name the message by the id as written here.
    const std::uint32_t key = raw_id;
    if (const DbcMessage* d = db_.find(m.id, m.extended); d && by_id_.find(key) == by_id_.end())
      fail("message id " + std::to_string(raw_id) + " (" + m.name + ") is the same CAN id as " + d->name + " on line " +
           std::to_string(d->line));
    if (auto it = by_id_.find(key); it != by_id_.end())
      fail("message id " + std::to_string(raw_id) + " (" + m.name + ") already defined by " +
           db_.messages[it->second].name + " on line " + std::to_string(db_.messages[it->second].line));
    by_id_[key] = db_.messages.size();
    db_.messages.push_back(std::move(m));
    current_ = db_.messages.size() - 1;
  }

  void parse_signal() {
    auto fail = [this](const std::string& m) { error("SG_: " + m); };
    if (skipping_signals_) {
      skip_line();
      return;
    }
    if (current_ == npos) fail("signal outside a message (no BO_ before it)");
    DbcSignal s;
    s.line = stmt_line_;
    skip_blanks();
    s.name = std::string(word());
    if (s.name.empty()) fail("expected a signal name");
    entry_signal_ = s.name;
    skip_blanks();
    if (peek() != ':') {
      std::string_view mux = word();
      if (mux == "M") {
        s.is_multiplexor = true;
      } else if (mux == "m") {
        // A lone "m" (no switch value) where "M" was meant, as some exporters write it.
        quirk("SG_: " + s.name + ": lone multiplexer indicator \"m\" read as \"M\"",
              "SG_: bad multiplexer indicator \"m\" for " + s.name + " (expected M, m<n> or m<n>M)");
        s.is_multiplexor = true;
      } else if (mux.size() >= 2 && mux[0] == 'm') {
        std::string_view digits = mux.substr(1);
        if (digits.back() == 'M') {
          s.is_multiplexor = true;
          digits.remove_suffix(1);
        }
        std::uint64_t v = 0;
        auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
        if (digits.empty() || r.ec != std::errc() || r.ptr != digits.data() + digits.size())
          fail("bad multiplexer indicator \"" + std::string(mux) + "\" for " + s.name);
        s.mux_value = v;
      } else {
        fail("bad multiplexer indicator \"" + std::string(mux) + "\" for " + s.name + " (expected M, m<n> or m<n>M)");
      }
    }
    expect(':', "after the signal name", fail);
    auto start = try_uint();
    if (!start) fail(s.name + ": expected the start bit");
    expect('|', "after the start bit", fail);
    auto length = try_uint();
    if (!length) fail(s.name + ": expected the length in bits");
    expect('@', "after the length", fail);
    skip_blanks();
    char order = peek();
    if (order != '0' && order != '1') fail(s.name + ": byte order must be @0 or @1");
    ++p_;
    char sign = peek();
    if (sign != '+' && sign != '-') fail(s.name + ": sign must be + or -");
    ++p_;
    expect('(', "before factor,offset", fail);
    auto factor = try_double();
    if (!factor) fail(s.name + ": bad factor");
    expect(',', "between factor and offset", fail);
    auto offset = try_double();
    if (!offset) fail(s.name + ": bad offset");
    expect(')', "after factor,offset", fail);
    expect('[', "before [min|max]", fail);
    auto minimum = try_double();
    if (!minimum) fail(s.name + ": bad minimum");
    expect('|', "between min and max", fail);
    auto maximum = try_double();
    if (!maximum) fail(s.name + ": bad maximum");
    expect(']', "after [min|max]", fail);
    auto unit = try_string();
    if (!unit) fail(s.name + ": expected the unit string");
    while (true) {
      skip_blanks();
      if (at_eol()) break;
      if (peek() == ',') {
        ++p_;
        continue;
      }
      std::string_view r = word();
      if (r.empty()) fail(s.name + ": unexpected '" + printable(peek()) + "' in receivers");
      s.receivers.emplace_back(r);
    }
    if (*start > 511) fail(s.name + ": start bit " + std::to_string(*start) + " > 511");
    if (*length < 1 || *length > 64) fail(s.name + ": length " + std::to_string(*length) + " not in 1..64");
    s.start_bit = static_cast<std::uint16_t>(*start);
    s.length = static_cast<std::uint16_t>(*length);
    s.byte_order = order == '1' ? ByteOrder::little_endian : ByteOrder::big_endian;
    s.is_signed = sign == '-';
    s.factor = *factor;
    s.offset = *offset;
    s.minimum = *minimum;
    s.maximum = *maximum;
    s.unit = std::move(*unit);
    auto& msg = db_.messages[current_];
    if (msg.find_signal(s.name)) fail("signal " + s.name + " defined twice in message " + msg.name);
    msg.signals.push_back(std::move(s));
  }

  // For statements that name a message by id: finds it or reports why not.
  DbcMessage* message_by_raw_id(std::uint64_t raw) {
    auto it = by_id_.find(static_cast<std::uint32_t>(raw));
    return it == by_id_.end() ? nullptr : &db_.messages[it->second];
  }
  std::uint64_t soft_id() {
    auto id = try_uint();
    if (!id || *id > 0xFFFFFFFFu) throw SoftError{"expected a message id"};
    return *id;
  }
  std::string soft_word(const char* what) {
    skip_blanks();
    std::string_view w = word();
    if (w.empty()) throw SoftError{std::string("expected ") + what};
    return std::string(w);
  }
  void soft_end() {
    skip_ws();
    if (peek() != ';') throw SoftError{"expected ';'"};
    ++p_;
  }

  void parse_comment() {
    skip_blanks();
    std::string object;
    if (peek() != '"') object = soft_word("an object kind or a string");
    std::uint64_t id = 0;
    std::string target;
    if (object == "BO_" || object == "SG_") id = soft_id();
    if (object == "SG_" || object == "BU_" || object == "EV_") target = soft_word("a name");
    skip_ws();
    auto text = try_string();
    if (!text) throw SoftError{"expected the comment string"};
    soft_end();
    if (object == "BO_" || object == "SG_") {
      DbcMessage* m = message_by_raw_id(id);
      if (!m) {
        if (!left_out(id)) warn("CM_: no message with id " + std::to_string(id));
        return;
      }
      if (object == "BO_") {
        m->comment = std::move(*text);
      } else if (auto* s = mutable_signal(*m, target)) {
        s->comment = std::move(*text);
      } else if (!left_out(id, target)) {
        warn("CM_: no signal " + target + " in message " + m->name);
      }
    }
  }

  static DbcSignal* mutable_signal(DbcMessage& m, std::string_view name) {
    for (auto& s : m.signals)
      if (s.name == name) return &s;
    return nullptr;
  }

  // An attribute value: a number (kept as written) or a string.
  std::string attribute_value() {
    skip_ws();
    if (peek() == '"') {
      auto s = try_string();
      if (!s) throw SoftError{"unterminated string"};
      return *s;
    }
    std::string_view n = number_lexeme();
    if (n.empty()) throw SoftError{"expected a value"};
    return std::string(n);
  }

  void parse_attribute_definition() {
    AttrDef def;
    skip_blanks();
    if (peek() != '"') def.object = soft_word("an object kind");
    skip_blanks();
    auto name = try_string();
    if (!name) throw SoftError{"expected the attribute name"};
    def.name = *name;
    def.type = soft_word("an attribute type");
    if (def.type == "ENUM") {
      while (true) {
        skip_ws();
        if (peek() == ';') break;
        if (peek() == ',') {
          ++p_;
          continue;
        }
        auto v = try_string();
        if (!v) throw SoftError{"bad ENUM value list"};
        def.enums.push_back(*v);
      }
    }
    skip_statement();
    attr_defs_.push_back(std::move(def));
  }

  AttrDef* attr_def(std::string_view name) {
    for (auto& d : attr_defs_)
      if (d.name == name) return &d;
    return nullptr;
  }

  // Attribute values of ENUM type are written as indices; resolve them to text.
  std::string resolve(const AttrDef* def, std::string value) const {
    if (!def || def->type != "ENUM") return value;
    std::size_t index = 0;
    auto r = std::from_chars(value.data(), value.data() + value.size(), index);
    if (r.ec == std::errc() && r.ptr == value.data() + value.size() && index < def->enums.size())
      return def->enums[index];
    return value;
  }

  void parse_attribute_default() {
    skip_blanks();
    auto name = try_string();
    if (!name) throw SoftError{"expected the attribute name"};
    std::string value = attribute_value();
    soft_end();
    if (AttrDef* def = attr_def(*name)) {
      def->default_value = resolve(def, std::move(value));
    } else {
      warn("BA_DEF_DEF_: attribute \"" + *name + "\" not defined by BA_DEF_");
    }
  }

  void parse_attribute() {
    skip_blanks();
    auto name = try_string();
    if (!name) throw SoftError{"expected the attribute name"};
    skip_blanks();
    std::string object;
    if (peek() != '"' && !(peek() >= '0' && peek() <= '9') && peek() != '-' && peek() != '.')
      object = soft_word("an object kind or a value");
    std::uint64_t id = 0;
    std::string target;
    if (object == "BO_" || object == "SG_") id = soft_id();
    if (object == "SG_" || object == "BU_" || object == "EV_") target = soft_word("a name");
    std::string value = resolve(attr_def(*name), attribute_value());
    soft_end();
    if (object == "BO_" || object == "SG_") {
      DbcMessage* m = message_by_raw_id(id);
      if (!m) {
        if (!left_out(id)) warn("BA_: no message with id " + std::to_string(id));
        return;
      }
      if (object == "BO_") {
        m->attributes.push_back({*name, std::move(value)});
      } else if (auto* s = mutable_signal(*m, target)) {
        s->attributes.push_back({*name, std::move(value)});
      } else if (!left_out(id, target)) {
        warn("BA_: no signal " + target + " in message " + m->name);
      }
    }
  }

  void parse_value_table() {
    skip_blanks();
    if (!(peek() >= '0' && peek() <= '9')) {  // VAL_ of an environment variable
      skip_statement();
      return;
    }
    std::uint64_t id = soft_id();
    std::string sig = soft_word("a signal name");
    std::vector<std::pair<std::int64_t, std::string>> table;
    while (true) {
      skip_ws();
      if (peek() == ';') {
        ++p_;
        break;
      }
      if (at_end()) throw SoftError{"expected ';'"};
      // Some writers print values as "1.0"; take the integer part when it is exact.
      auto v = try_double();
      if (!v || *v != std::floor(*v) || std::fabs(*v) > 9.2e18) throw SoftError{"expected an integer value"};
      skip_ws();
      auto text = try_string();
      if (!text) throw SoftError{"expected the value's text"};
      table.emplace_back(static_cast<std::int64_t>(*v), std::move(*text));
    }
    DbcMessage* m = message_by_raw_id(id);
    if (!m) {
      if (!left_out(id)) warn("VAL_: no message with id " + std::to_string(id));
      return;
    }
    if (auto* s = mutable_signal(*m, sig)) {
      s->value_table = std::move(table);
    } else if (!left_out(id, sig)) {
      warn("VAL_: no signal " + sig + " in message " + m->name);
    }
  }

  void parse_valtype() {
    auto fail = [this](const std::string& m) { error("SIG_VALTYPE_: " + m); };
    auto id = try_uint();
    if (!id) fail("expected a message id");
    entry_id_ = *id;
    skip_blanks();
    std::string sig(word());
    if (sig.empty()) fail("expected a signal name");
    entry_signal_ = sig;
    skip_blanks();
    if (peek() == ':') ++p_;
    auto type = try_uint();
    if (!type || *type > 2) fail(sig + ": value type must be 0, 1 (float) or 2 (double)");
    skip_ws();
    if (peek() == ';') ++p_;
    DbcMessage* m = message_by_raw_id(*id);
    DbcSignal* s = m ? mutable_signal(*m, sig) : nullptr;
    if (!s) {
      if (!left_out(*id, sig)) warn("SIG_VALTYPE_: no signal " + sig + " in message id " + std::to_string(*id));
      return;
    }
    s->value_type = *type == 0 ? ValueType::integer : (*type == 1 ? ValueType::float32 : ValueType::float64);
  }

  void parse_mux_values() {
    auto fail = [this](const std::string& m) { error("SG_MUL_VAL_: " + m); };
    auto id = try_uint();
    if (!id) fail("expected a message id");
    entry_id_ = *id;
    skip_blanks();
    std::string sig(word());
    entry_signal_ = sig;
    skip_blanks();
    std::string mux(word());
    if (sig.empty() || mux.empty()) fail("expected the signal and multiplexor names");
    std::vector<MuxRange> ranges;
    while (true) {
      skip_ws();
      if (peek() == ';') {
        ++p_;
        break;
      }
      if (peek() == ',') {
        ++p_;
        continue;
      }
      auto lo = try_uint();
      if (!lo) fail(sig + ": expected a range lo-hi");
      skip_blanks();
      if (peek() != '-') fail(sig + ": expected '-' in a range");
      ++p_;
      auto hi = try_uint();
      if (!hi || *hi < *lo) fail(sig + ": bad range end");
      ranges.push_back({*lo, *hi});
    }
    DbcMessage* m = message_by_raw_id(*id);
    DbcSignal* s = m ? mutable_signal(*m, sig) : nullptr;
    if (!s) {
      if (!left_out(*id, sig)) warn("SG_MUL_VAL_: no signal " + sig + " in message id " + std::to_string(*id));
      return;
    }
    if (!s->multiplexor.empty() && s->multiplexor != mux)
      fail(sig + ": multiplexed by both " + s->multiplexor + " and " + mux);
    s->multiplexor = mux;
    s->mux_ranges.insert(s->mux_ranges.end(), ranges.begin(), ranges.end());
  }

  // ---- after the last statement
  std::optional<std::string> attribute_of(const std::vector<DbcAttribute>& attrs, std::string_view name) {
    for (const auto& a : attrs)
      if (a.name == name) return a.value;
    if (const AttrDef* d = attr_def(name)) return d->default_value;
    return std::nullopt;
  }

  void finish() {
    for (auto& m : db_.messages) {
      if (auto fmt = attribute_of(m.attributes, "VFrameFormat")) m.fd = fmt->find("FD") != std::string::npos;
      if (m.size > 8) m.fd = true;
      if (auto ct = attribute_of(m.attributes, "GenMsgCycleTime")) {
        double ms = 0;
        auto r = std::from_chars(ct->data(), ct->data() + ct->size(), ms);
        if (r.ec == std::errc() && ms > 0 && std::isfinite(ms)) m.cycle_time_s = ms / 1000.0;
      }
      // A signal that cannot be decoded right is an error (strict) or left out (forgiving);
      // leaving one out may leave another without its multiplexor, so look again until none.
      for (std::size_t pass = 0; pass <= m.signals.size() + 1; ++pass) {
        std::optional<SignalProblem> p = layout_problem(m);
        if (!p) p = multiplexing_problem(m);
        if (!p) break;
        const DbcSignal& bad = m.signals[p->index];
        const std::string message = m.name + "." + bad.name + ": " + p->message;
        if (opt_.strict) error_at(bad.line, message);
        db_.warnings.push_back({name_, bad.line, message + ": signal left out"});
        db_.skipped.push_back({name_, bad.line, m.name, bad.name, p->message});
        m.signals.erase(m.signals.begin() + static_cast<std::ptrdiff_t>(p->index));
      }
      for (const auto& s : m.signals) {
        if (signal_end_bit(s) > std::size_t{m.size} * 8u)
          db_.warnings.push_back({name_, s.line,
                                  m.name + "." + s.name + ": extends past the message's " + std::to_string(m.size) +
                                      " bytes; decoded only from longer frames"});
        if (s.factor == 0)
          db_.warnings.push_back({name_, s.line, m.name + "." + s.name + ": factor 0 (cannot be encoded)"});
      }
    }
  }

  struct SignalProblem {
    std::size_t index;
    std::string message;
  };

  // One past the highest bit the signal needs, in byte*8+bit numbering of the payload.
  static std::size_t signal_end_bit(const DbcSignal& s) {
    if (s.byte_order == ByteOrder::little_endian) return std::size_t{s.start_bit} + s.length;
    const std::size_t msb = (s.start_bit / 8u) * 8u + (7u - s.start_bit % 8u);
    return msb + s.length;
  }

  static std::optional<SignalProblem> layout_problem(const DbcMessage& m) {
    for (std::size_t i = 0; i < m.signals.size(); ++i) {
      const DbcSignal& s = m.signals[i];
      if (s.value_type == ValueType::float32 && s.length != 32)
        return SignalProblem{i, "an IEEE float signal must be 32 bits long, not " + std::to_string(s.length)};
      if (s.value_type == ValueType::float64 && s.length != 64)
        return SignalProblem{i, "an IEEE double signal must be 64 bits long, not " + std::to_string(s.length)};
      if (signal_end_bit(s) > 512)
        return SignalProblem{i, "does not fit in 64 bytes (start bit " + std::to_string(s.start_bit) + ", length " +
                                    std::to_string(s.length) + ")"};
    }
    return std::nullopt;
  }

  // Resolves each multiplexed signal's switch and ranges; the first signal whose multiplexing
  // is ambiguous or impossible, if any.
  std::optional<SignalProblem> multiplexing_problem(DbcMessage& m) {
    // Top-level switches: multiplexors that are not themselves multiplexed.
    std::vector<const DbcSignal*> top;
    for (const auto& s : m.signals)
      if (s.is_multiplexor && !s.mux_value && s.multiplexor.empty()) top.push_back(&s);
    for (std::size_t i = 0; i < m.signals.size(); ++i) {
      DbcSignal& s = m.signals[i];
      if (!s.mux_value && s.multiplexor.empty()) continue;
      if (s.multiplexor.empty()) {
        if (top.size() != 1)
          return SignalProblem{i, "multiplexed (m" + std::to_string(*s.mux_value) + ") but the message has " +
                                      std::to_string(top.size()) +
                                      " top-level multiplexors (M) and no SG_MUL_VAL_ for it"};
        s.multiplexor = top.front()->name;
      }
      if (s.mux_ranges.empty()) {
        if (!s.mux_value) return SignalProblem{i, "SG_MUL_VAL_ without ranges"};
        s.mux_ranges.push_back({*s.mux_value, *s.mux_value});
      }
      if (s.multiplexor == s.name) return SignalProblem{i, "multiplexed by itself"};
    }
    for (std::size_t i = 0; i < m.signals.size(); ++i) {
      const DbcSignal& s = m.signals[i];
      if (s.multiplexor.empty()) continue;
      DbcSignal* sw = mutable_signal(m, s.multiplexor);
      if (!sw) return SignalProblem{i, "multiplexor " + s.multiplexor + " is not a signal of the message"};
      if (sw->value_type != ValueType::integer)
        return SignalProblem{i, "multiplexor " + s.multiplexor + " is a float signal"};
      sw->is_multiplexor = true;
    }
    // No cycles: every chain of switches must end within signals.size() steps.
    for (std::size_t i = 0; i < m.signals.size(); ++i) {
      const DbcSignal* cur = &m.signals[i];
      std::size_t steps = 0;
      while (!cur->multiplexor.empty()) {
        cur = m.find_signal(cur->multiplexor);
        if (++steps > m.signals.size()) return SignalProblem{i, "multiplexors form a cycle"};
      }
    }
    return std::nullopt;
  }

  std::string_view t_;
  std::size_t p_ = 0;
  std::size_t line_ = 1;
  std::size_t stmt_line_ = 1;
  const std::string& name_;
  Dbc& db_;
  const DbcOptions& opt_;
  std::size_t current_ = npos;
  // The entry the statement being read is about (for leaving it out), and what was left out.
  std::string entry_message_, entry_signal_;
  std::optional<std::uint64_t> entry_id_;
  std::vector<std::uint64_t> skipped_ids_;
  std::vector<std::pair<std::size_t, std::string>> skipped_signals_;  // (message's line, signal)
  bool skipping_signals_ = false;
  std::unordered_map<std::uint32_t, std::size_t> by_id_;  // raw BO_ id -> message index
  std::vector<AttrDef> attr_defs_;
};

}  // namespace

Dbc parse_dbc(std::string_view text, const std::string& name, const DbcOptions& options) {
  Dbc db;
  db.file = name;
  Parser(text, name, db, options).run();
  return db;
}

Dbc load_dbc(const std::filesystem::path& file, const DbcOptions& options) {
  constexpr std::uintmax_t kMaxBytes = 256u << 20;  // the largest production DBCs are a few MiB
  std::string text;
  try {
    text = read_input_file(file, kMaxBytes, "DBC file");
  } catch (const ConfigError& e) {
    throw DbcError(e.what());
  }
  return parse_dbc(text, file.string(), options);
}

Dbc merge_dbcs(std::vector<Dbc> parts, const DbcOptions& options) {
  if (parts.empty()) return {};
  Dbc out = std::move(parts.front());
  for (std::size_t i = 1; i < parts.size(); ++i) {
    Dbc& p = parts[i];
    for (auto& m : p.messages) {
      std::string problem;
      if (const DbcMessage* d = out.find(m.id, m.extended))
        problem = "message id " + std::to_string(m.id) + " (" + m.name + ") already defined as " + d->name + " in " +
                  out.file;
      else if (const DbcMessage* d = out.find(m.name))
        problem = "message name " + m.name + " already defined (id " + std::to_string(d->id) + ") in " + out.file;
      if (problem.empty()) {
        out.messages.push_back(std::move(m));
        continue;
      }
      if (options.strict) throw DbcError(p.file + ":" + std::to_string(m.line) + ": " + problem);
      p.warnings.push_back({p.file, m.line, problem + ": this one left out"});
      p.skipped.push_back({p.file, m.line, m.name, "", problem});
    }
    for (auto& w : p.warnings) out.warnings.push_back(std::move(w));
    for (auto& k : p.skipped) out.skipped.push_back(std::move(k));
    out.nodes.insert(out.nodes.end(), p.nodes.begin(), p.nodes.end());
    out.file += ", " + p.file;
  }
  return out;
}

}  // namespace mbo::io
