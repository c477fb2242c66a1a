// Option values (src/sys/units.h): what the commands accept, and their one-line errors;
// number text (append_fixed).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "sys/units.h"

using namespace schedhot;

namespace {

std::string error_of(auto f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST(Units, DurationsIntervalsAndSizes) {
  EXPECT_EQ(parse_duration_ns("3", "-d"), 3'000'000'000u);
  EXPECT_EQ(parse_duration_ns("2.5s", "-d"), 2'500'000'000u);
  EXPECT_EQ(parse_duration_ns("250ms", "-d"), 250'000'000u);
  EXPECT_EQ(parse_duration_ns("7us", "-d"), 7'000u);
  EXPECT_EQ(parse_duration_ns("2m", "-d"), 120'000'000'000u);
  EXPECT_EQ(parse_duration_ns("1h", "-d"), 3'600'000'000'000u);
  EXPECT_EQ(parse_interval_ns("10ms"), 10'000'000u);
  EXPECT_EQ(parse_size_bytes("64K", "--max-size"), 65536u);
  EXPECT_EQ(parse_size_bytes("2M", "--max-size"), 2u << 20);
  EXPECT_EQ(parse_size_bytes("1000", "--max-size"), 1000u);
  EXPECT_EQ(error_of([] { parse_duration_ns("-1", "-d/--duration"); }), "-d/--duration '-1' is not a non-negative number");
  EXPECT_EQ(error_of([] { parse_duration_ns("5x", "--at"); }), "--at '5x': unknown unit 'x' (use us, ms, s, m or h)");
  EXPECT_EQ(error_of([] { parse_duration_ns("0x10", "--p99-flag"); }), "--p99-flag '0x10' is not a non-negative number");
  EXPECT_EQ(error_of([] { parse_duration_ns(" 5us", "--p99-flag"); }), "--p99-flag ' 5us' is not a non-negative number");
  EXPECT_EQ(parse_duration_ns(".5s", "--at"), 500000000u);
  EXPECT_EQ(error_of([] { parse_duration_ns("1e12h", "--to"); }), "--to '1e12h' is too long (at most 1e18 ns, 31 years)");
  EXPECT_EQ(error_of([] { parse_interval_ns("5ms"); }), "-i/--interval must be at least 10ms");
  EXPECT_EQ(parse_interval_ns("24h"), kMaxIntervalNs);
  EXPECT_EQ(error_of([] { parse_interval_ns("25h"); }), "-i/--interval must be at most 24h");
  EXPECT_EQ(error_of([] { parse_size_bytes("12Q", "--max-size"); }), "--max-size '12Q': unknown unit 'Q' (use K, M or G)");
  EXPECT_EQ(error_of([] { parse_size_bytes("1e30G", "--max-size"); }), "--max-size '1e30G': too large (at most 4E bytes)");
}

TEST(Units, ADurationMustCoverAnInterval) {
  EXPECT_EQ(error_of([] { check_covers_an_interval(1'000'000'000, 1'000'000'000, "1", "1", false); }), "(accepted)");
  EXPECT_EQ(error_of([] { check_covers_an_interval(500'000'000, 1'000'000'000, "0.5", "1", true); }),
            "-d 0.5 is shorter than one interval (-i 1): rates need two samples");
  // record: -d 0 is "until stopped"; report --live has no such thing.
  EXPECT_EQ(error_of([] { check_covers_an_interval(0, 1'000'000'000, "0", "1", true); }), "(accepted)");
  EXPECT_NE(error_of([] { check_covers_an_interval(0, 1'000'000'000, "0", "1", false); }), "(accepted)");
  // A positive -d that rounds to 0 ns is short, not "until stopped".
  EXPECT_NE(error_of([] { check_covers_an_interval(0, 1'000'000'000, "1e-10", "1", true); }), "(accepted)");
}

TEST(Units, StartAtIsAnEpochInstantOrTheNextAlignedOne) {
  const uint64_t now = 1'764'650'012'300'000'000ull;  // 1764650012.3 s
  EXPECT_EQ(parse_start_at_ns("1764650020", now), 1'764'650'020'000'000'000ull);
  EXPECT_EQ(parse_start_at_ns("1764650020.5", now), 1'764'650'020'500'000'000ull);
  EXPECT_EQ(parse_start_at_ns("@60", now), 1'764'650'040'000'000'000ull) << "next multiple of 60 s";
  EXPECT_EQ(parse_start_at_ns("@500ms", now), 1'764'650'012'500'000'000ull);
  EXPECT_EQ(parse_start_at_ns("@1", 1'764'650'012'000'000'000ull), 1'764'650'013'000'000'000ull) << "strictly after now";
  EXPECT_EQ(error_of([] { parse_start_at_ns("1764650000", 1'764'650'012'300'000'000ull); }),
            "--start-at 1764650000 is 12.300 s in the past (clock: CLOCK_REALTIME)");
  EXPECT_EQ(error_of([] { parse_start_at_ns("soon", 1'764'650'012'300'000'000ull); }).rfind("--start-at", 0), 0u);
  EXPECT_EQ(error_of([] { parse_start_at_ns("@0.1ms", 1'764'650'012'300'000'000ull); }),
            "--start-at '@0.1ms': the alignment must be at least 1ms");
  EXPECT_NE(error_of([] { parse_start_at_ns("1765650012", 1'764'650'012'300'000'000ull); }).find("more than 7 days ahead"),
            std::string::npos);
  EXPECT_EQ(error_of([] { parse_start_at_ns("1764650012300", 1'764'650'012'300'000'000ull); }),
            "--start-at '1764650012300' is too far ahead") << "a milliseconds epoch";
}

TEST(Units, BytesReadBackAsSizes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(64 << 10), "64 KiB");
  EXPECT_EQ(format_bytes(3 << 19), "1.5 MiB");
  EXPECT_EQ(format_bytes(uint64_t(1) << 30), "1 GiB");
  EXPECT_EQ(format_bytes(UINT64_MAX), "16 EiB");
  EXPECT_EQ(parse_size_bytes("64K", "x"), uint64_t(64) << 10);
}

// append_fixed writes what fmt's "{:.Nf}" writes, byte for byte: exact ties (k / 2^m) round
// to even, the doubles either side of every tie and of every rounding step, random values
// over 20 decades, signs, zeros, and the values past its fixed-point range (fmt's path).
TEST(Units, AppendFixedIsFmtsFixedByteForByte) {
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  };
  size_t checked = 0, mismatches = 0;
  std::string first_bad;
  auto check = [&](double v) {
    for (int d = 0; d <= 6; ++d) {
      std::string got;
      append_fixed(got, v, d);
      const std::string want = fmt::format("{:.{}f}", v, d);
      fmt::memory_buffer mb;
      append_fixed(mb, v, d);
      ++checked;
      if (got != want || fmt::to_string(mb) != want) {
        if (!mismatches++) first_bad = fmt::format("{:a} at {} decimals: got {} want {}", v, d, got, want);
      }
    }
  };
  for (double v : {0.0, -0.0, 0.5, 1.5, 2.5, -2.5, 0.0625, 0.125, 0.0005, 0.00025, 1e-300, -1e-300, 5e-324,
                   0x1p50 / 1000, 0x1p50 / 1000 - 1, 1e12, 1.1e12, 1e15, 1e300, -1e300,
                   std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                   std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::max()})
    check(v);
  // Exact ties and their neighbours: k / 2^m for m up to 12 (ties at 1..6 decimals are
  // such dyadic values), and the step points (n + 0.5) / 10^d for random n.
  for (int m = 1; m <= 12; ++m)
    for (int k = 1; k < 4096; k += 1 + (k >> 6)) {
      const double v = std::ldexp(double(k), -m) + double(next() % 1000);
      for (double w : {v, std::nextafter(v, 0.0), std::nextafter(v, 1e300)}) check(w), check(-w);
    }
  static constexpr double kScale[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6};
  for (int i = 0; i < 20000; ++i) {
    const int d = int(next() % 7);
    const double v = (double(next() % 100000000000ull) + 0.5) / kScale[d];
    for (double w : {v, std::nextafter(v, 0.0), std::nextafter(v, 1e300)}) check(w);
  }
  for (int i = 0; i < 200000; ++i) {
    const double mant = double(next() >> 11) * 0x1p-53;
    check((next() & 1 ? -1 : 1) * mant * std::pow(10.0, double(int(next() % 24)) - 10));
  }
  EXPECT_EQ(mismatches, 0u) << "of " << checked << "; first: " << first_bad;
  EXPECT_GT(checked, 1'500'000u);
}
