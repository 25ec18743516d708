// io layer speed: candump lines parsed per second, frames decoded per second with a real DBC
// (opendbc's vw_mqb.dbc), frames to measurements per second through the signal map, and
// python-can's read rate of the same generated candump file (tools/bench_python_can.py),
// measured in the same run, with the ratio.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mbobserver/io/candump.hpp"
#include "mbobserver/io/dbc.hpp"
#include "mbobserver/io/dbc_codec.hpp"
#include "mbobserver/io/log_reader.hpp"
#include "mbobserver/io/signal_map.hpp"

namespace {

using namespace mbo::io;

constexpr std::size_t kFrames = 200'000;

const DbcCodec& vw_codec() {
  static DbcCodec codec(load_dbc(std::filesystem::path(MBO_FIXTURES_DIR) / "dbc/opendbc/vw_mqb.dbc"));
  return codec;
}

// Frames of every vw_mqb message with random payloads, in random order, 100 us apart.
const std::vector<CanFrame>& vw_frames() {
  static std::vector<CanFrame> frames = [] {
    std::mt19937_64 rng(1);
    const auto& msgs = vw_codec().messages();
    std::vector<CanFrame> out;
    out.reserve(kFrames);
    for (std::size_t i = 0; i < kFrames; ++i) {
      const DbcMessage& m = msgs[rng() % msgs.size()].message();
      CanFrame f;
      f.t = 1'700'000'000.0 + static_cast<double>(i) * 1e-4;
      f.id = m.id;
      f.extended = m.extended;
      f.len = m.size;
      for (std::size_t b = 0; b < f.len; ++b) f.data[b] = static_cast<std::uint8_t>(rng());
      out.push_back(f);
    }
    return out;
  }();
  return frames;
}

const std::string& candump_text() {
  static std::string text = [] {
    std::string s;
    for (const auto& f : vw_frames()) s += format_candump_line(f, "can0");
    return s;
  }();
  return text;
}

std::filesystem::path candump_file() {
  static std::filesystem::path p = [] {
    auto path = std::filesystem::temp_directory_path() / "mbobserver-bench-candump.log";
    std::FILE* f = std::fopen(path.c_str(), "wb");
    std::fwrite(candump_text().data(), 1, candump_text().size(), f);
    std::fclose(f);
    return path;
  }();
  return p;
}

void BM_CandumpParseLine(benchmark::State& state) {
  const std::string& text = candump_text();
  std::vector<std::string_view> lines;
  for (std::size_t b = 0; b < text.size();) {
    std::size_t e = text.find('\n', b);
    lines.emplace_back(text.data() + b, e - b);
    b = e + 1;
  }
  CandumpRecord rec;
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(parse_candump_line(lines[i], rec));
    benchmark::DoNotOptimize(rec);
    if (++i == lines.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.SetLabel("lines");
}
BENCHMARK(BM_CandumpParseLine);

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Frames per second of CPU time: both readers are timed on CPU time, so that other work on a
// shared machine does not skew the ratio.
double read_file_rate(const std::filesystem::path& p) {
  const double t0 = cpu_seconds();
  LogReader r(p);
  CanFrame f;
  std::size_t n = 0;
  while (r.next(f)) ++n;
  return static_cast<double>(n) / (cpu_seconds() - t0);
}

void BM_LogReaderCandumpFile(benchmark::State& state) {
  const auto path = candump_file();
  std::size_t frames = 0;
  for (auto _ : state) {
    LogReader r(path);
    CanFrame f;
    while (r.next(f)) ++frames;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(frames));
  state.SetLabel("frames from a file, lines read and parsed");
}
BENCHMARK(BM_LogReaderCandumpFile)->Unit(benchmark::kMillisecond);

void BM_DecodeVwMqb(benchmark::State& state) {
  const DbcCodec& codec = vw_codec();
  const auto& frames = vw_frames();
  std::vector<DecodedSignal> out(512);
  std::size_t i = 0, signals = 0;
  for (auto _ : state) {
    const CanFrame& f = frames[i];
    const MessageCodec* m = codec.find(f.id, f.extended);
    signals += m->decode_all(std::span(f.data.data(), f.len), out);
    benchmark::DoNotOptimize(out.data());
    if (++i == frames.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["signals_per_s"] = benchmark::Counter(static_cast<double>(signals), benchmark::Counter::kIsRate);
  state.SetLabel("frames (every signal decoded)");
}
BENCHMARK(BM_DecodeVwMqb);

void BM_SignalMapToMeasurements(benchmark::State& state) {
  static SignalMap map = SignalMap::from_config(
      mbo::JsonReader::from_file(std::filesystem::path(MBO_SOURCE_DIR) / "config/can/vehicle_signals.json"));
  std::array<double, mbo::kChannelCount> v{};
  for (std::size_t c = 0; c < v.size(); ++c) v[c] = 0.1 * static_cast<double>(c);
  std::vector<CanFrame> frames;
  for (const auto& tx : map.tx_frames()) {
    CanFrame f;
    map.encode(tx, v, 1.0, f);
    frames.push_back(f);
  }
  std::vector<mbo::Measurement> out(map.max_per_frame());
  std::size_t i = 0, n = 0;
  for (auto _ : state) {
    n += map.decode(frames[i], out);
    benchmark::DoNotOptimize(out.data());
    if (++i == frames.size()) i = 0;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["measurements_per_s"] = benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsRate);
  state.SetLabel("frames of vehicle.dbc to measurements");
}
BENCHMARK(BM_SignalMapToMeasurements);

// Our reader and python-can on the same file, one after the other, best of three each.
void BM_PythonCanReadRateRatio(benchmark::State& state) {
  const auto path = candump_file();
  double ours = 0, theirs = 0;
  for (auto _ : state) {
    for (int k = 0; k < 3; ++k) ours = std::max(ours, read_file_rate(path));
    std::string cmd = "/usr/bin/python3 '" + std::string(MBO_SOURCE_DIR) + "/tools/bench_python_can.py' '" +
                      path.string() + "' --repeat 3";
    FILE* p = popen(cmd.c_str(), "r");
    std::string out;
    char buf[512];
    while (p && std::fgets(buf, sizeof buf, p)) out += buf;
    if (!p || pclose(p) != 0) {
      state.SkipWithError("tools/bench_python_can.py failed (is python3-can installed?)");
      return;
    }
    theirs = nlohmann::json::parse(out)["frames_per_s"].get<double>();
  }
  state.counters["ours_frames_per_s"] = ours;
  state.counters["python_can_frames_per_s"] = theirs;
  state.counters["ratio"] = ours / theirs;
  state.SetLabel("candump -l file, 200000 frames");
}
BENCHMARK(BM_PythonCanReadRateRatio)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
