// mbobserver-candecode --dbc FILE.dbc LOG: decodes a candump -l or Vector ASC log with a DBC
// and prints one JSON object per frame on stdout:
//   {"t":1.25,"bus":"can0","id":291,"extended":false,"name":"IMU_Gyro","signals":{"GyroZ":0.01}}
// Frames whose id the DBC does not know get "name":null,"unknown":true; error and remote
// frames are flagged and not decoded. A summary (counts, unknown ids, bad lines) goes to
// stderr. Unreadable DBC or log: one line on stderr, exit 2.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>
#include "mbobserver/core/program.hpp"

#include "mbobserver/io/dbc.hpp"
#include "mbobserver/io/dbc_codec.hpp"
#include "mbobserver/io/log_reader.hpp"

namespace {

using namespace mbo::io;

class JsonOut {
 public:
  ~JsonOut() { flush(); }
  void raw(std::string_view s) { buf_.append(s); }
  void ch(char c) { buf_.push_back(c); }
  void number(double v) {
    if (!std::isfinite(v)) {
      buf_.append("null");
      return;
    }
    char tmp[32];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, r.ptr);
  }
  void integer(std::uint64_t v) {
    char tmp[24];
    auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, r.ptr);
  }
  // JSON string; bytes >= 0x80 are taken as Latin-1 (DBC text is often cp1252).
  void string(std::string_view s) {
    buf_.push_back('"');
    for (char c : s) {
      auto u = static_cast<unsigned char>(c);
      if (c == '"' || c == '\\') {
        buf_.push_back('\\');
        buf_.push_back(c);
      } else if (u < 0x20 || u >= 0x7f) {
        char tmp[8];
        std::snprintf(tmp, sizeof tmp, "\\u%04x", u);
        buf_.append(tmp);
      } else {
        buf_.push_back(c);
      }
    }
    buf_.push_back('"');
  }
  void end_line() {
    buf_.push_back('\n');
    if (buf_.size() > (1u << 16)) flush();
  }
  void flush() {
    if (!buf_.empty()) std::fwrite(buf_.data(), 1, buf_.size(), stdout);
    buf_.clear();
  }

 private:
  std::string buf_;
};

std::string id_text(std::uint32_t id, bool extended) {
  char tmp[16];
  std::snprintf(tmp, sizeof tmp, extended ? "0x%08X" : "0x%03X", id);
  return std::string(tmp) + (extended ? "x" : "");
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Decodes a candump -l or Vector ASC log with a DBC: one JSON object per frame", "mbobserver-candecode"};
  mbo::CommonOptions common;
  mbo::add_common_options(app, common);
  std::vector<std::string> dbc_files;
  std::string log_file;
  app.add_option("--dbc", dbc_files, "DBC file (repeat for several)")->required();
  app.add_option("log", log_file, "candump -l (.log) or Vector ASC (.asc) file")->required();
  DbcOptions dbc_options;
  app.add_flag("--strict", dbc_options.strict,
               "refuse a DBC with a malformed entry or a vendor quirk (default: leave it out with a warning)");
  return mbo::run_program(app, argc, argv, common, [&] {
    std::vector<Dbc> dbcs;
    for (const auto& f : dbc_files) dbcs.push_back(load_dbc(f, dbc_options));
    DbcCodec codec(merge_dbcs(std::move(dbcs), dbc_options));
    for (const auto& w : codec.dbc().warnings) spdlog::warn("{}", w.text());
    LogReader reader{std::filesystem::path(log_file)};

    JsonOut out;
    std::vector<DecodedSignal> decoded;
    std::map<std::pair<bool, std::uint32_t>, std::uint64_t> unknown_ids;
    std::uint64_t frames = 0, decoded_frames = 0, unknown = 0, errors = 0, remotes = 0;
    CanFrame f;
    while (reader.next(f)) {
      ++frames;
      out.raw("{\"t\":");
      out.number(f.t);
      out.raw(",\"bus\":");
      out.string(f.channel < reader.interfaces().size() ? reader.interfaces()[f.channel] : "");
      out.raw(",\"id\":");
      out.integer(f.id);
      out.raw(",\"extended\":");
      out.raw(f.extended ? "true" : "false");
      if (f.fd) out.raw(",\"fd\":true");
      const MessageCodec* m = f.error ? nullptr : codec.find(f.id, f.extended);
      out.raw(",\"name\":");
      if (m)
        out.string(m->message().name);
      else
        out.raw("null");
      if (f.error) {
        ++errors;
        out.raw(",\"error\":true");
      } else if (f.remote) {
        ++remotes;
        out.raw(",\"remote\":true");
      } else if (!m) {
        ++unknown;
        ++unknown_ids[{f.extended, f.id}];
        out.raw(",\"unknown\":true");
      }
      const bool decode = m && !f.error && !f.remote;
      // Fewer bytes than the DBC says: signals beyond the payload are left out.
      if (decode && f.len < m->message().size) out.raw(",\"short_frame\":true");
      out.raw(",\"signals\":{");
      if (decode) {
        ++decoded_frames;
        decoded.resize(m->signal_count());
        std::size_t n = m->decode_all(std::span(f.data.data(), f.len), decoded);
        for (std::size_t i = 0; i < n; ++i) {
          if (i) out.ch(',');
          out.string(m->message().signals[decoded[i].index].name);
          out.ch(':');
          out.number(decoded[i].value);
        }
      }
      out.raw("}}");
      out.end_line();
    }
    out.flush();
    std::fflush(stdout);

    const auto& st = reader.stats();
    std::string ids;
    std::size_t shown = 0;
    for (const auto& [key, count] : unknown_ids) {
      if (shown++ == 20) {
        ids += ", ...";
        break;
      }
      ids += (ids.empty() ? "" : ", ") + id_text(key.second, key.first) + " (" + std::to_string(count) + ")";
    }
    std::fprintf(stderr,
                 "mbobserver-candecode: %s: %llu frames, %llu decoded, %llu with unknown ids "
                 "(%zu distinct%s%s), %llu error frames, %llu remote frames, %llu bad lines "
                 "skipped, %llu timestamps going back\n",
                 log_file.c_str(), static_cast<unsigned long long>(frames),
                 static_cast<unsigned long long>(decoded_frames), static_cast<unsigned long long>(unknown),
                 unknown_ids.size(), ids.empty() ? "" : ": ", ids.c_str(), static_cast<unsigned long long>(errors),
                 static_cast<unsigned long long>(remotes), static_cast<unsigned long long>(st.bad_lines),
                 static_cast<unsigned long long>(st.backwards));
    std::size_t k = 0;
    for (const auto& p : reader.problems()) {
      if (k++ == 10) {
        std::fprintf(stderr, "mbobserver-candecode: ... (%zu more kept, see the counts above)\n",
                     reader.problems().size() - 10);
        break;
      }
      std::fprintf(stderr, "mbobserver-candecode: %s:%llu: %s\n", log_file.c_str(),
                   static_cast<unsigned long long>(p.line), p.message.c_str());
    }
    return mbo::kExitOk;
  });
}
