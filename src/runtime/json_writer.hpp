// Minimal JSON emitter for the datagrams: appends to a std::string whose capacity was
// reserved once, so steady-state serialisation does not allocate. Numbers use
// std::to_chars (shortest representation that round-trips; locale-independent), so the same
// record always gives the same bytes. Non-finite numbers become null (RFC 8259 has no NaN).
#pragma once

#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

namespace mbo::runtime::detail {

class JsonWriter {
 public:
  explicit JsonWriter(std::string& out) : out_(out) { out_.clear(); }

  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }

  void key(std::string_view k) {
    separator();
    quoted(k);
    out_ += ':';
    after_key_ = true;
  }

  void number(double v) {
    value_start();
    if (!std::isfinite(v)) {
      out_ += "null";
      return;
    }
    std::array<char, 32> buf;
    auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    out_.append(buf.data(), ptr);
  }
  void integer(std::uint64_t v) {
    value_start();
    std::array<char, 24> buf;
    auto [ptr, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    out_.append(buf.data(), ptr);
  }
  void boolean(bool v) {
    value_start();
    out_ += v ? "true" : "false";
  }
  void null() {
    value_start();
    out_ += "null";
  }
  void string(std::string_view s) {
    value_start();
    quoted(s);
  }

  // Shorthands for "key": value.
  void field(std::string_view k, double v) {
    key(k);
    number(v);
  }
  void field_int(std::string_view k, std::uint64_t v) {
    key(k);
    integer(v);
  }
  void field_bool(std::string_view k, bool v) {
    key(k);
    boolean(v);
  }
  void field_str(std::string_view k, std::string_view v) {
    key(k);
    string(v);
  }
  template <class Array>
  void field_array(std::string_view k, const Array& values) {
    key(k);
    begin_array();
    for (double v : values) number(v);
    end_array();
  }

 private:
  void open(char c) {
    value_start();
    out_ += c;
    first_[++depth_] = true;
  }
  void close(char c) {
    out_ += c;
    --depth_;
  }
  void separator() {
    if (!first_[depth_]) out_ += ',';
    first_[depth_] = false;
  }
  void value_start() {
    if (after_key_)
      after_key_ = false;
    else if (depth_ > 0)
      separator();
  }
  void quoted(std::string_view s) {
    out_ += '"';
    for (char ch : s) {
      const auto c = static_cast<unsigned char>(ch);
      if (c == '"' || c == '\\') {
        out_ += '\\';
        out_ += ch;
      } else if (c < 0x20) {
        static constexpr char hex[] = "0123456789abcdef";
        out_ += "\\u00";
        out_ += hex[c >> 4];
        out_ += hex[c & 15];
      } else {
        out_ += ch;
      }
    }
    out_ += '"';
  }

  std::string& out_;
  std::array<bool, 16> first_{};
  int depth_ = 0;
  bool after_key_ = false;
};

}  // namespace mbo::runtime::detail
