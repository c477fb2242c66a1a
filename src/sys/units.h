// Durations, intervals and sizes as the command line spells them. Every parser throws
// std::invalid_argument with a one-line message naming the option (`what`), which the
// command layer prints as "schedhot: MSG" with exit status 2.
#pragma once
#include <cstdint>
#include <string>

#include <fmt/format.h>

namespace schedhot {

/// Parses "3", "2.5", "500ms", "250us", "10s", "2m", "1h" (no unit: seconds) to ns.
/// Throws std::invalid_argument: not a non-negative number, an unknown unit, or longer
/// than 1e18 ns.
uint64_t parse_duration_ns(const std::string& s, const char* what);

/// The longest sample interval, ns (1 day): -i/--interval refuses more, and a recording
/// whose metadata says more is refused as bad metadata (a crafted interval_ns, such as a
/// negative one read as 2^64-5, made every --from/--to window span the whole file).
inline constexpr uint64_t kMaxIntervalNs = 24ull * 3600 * 1'000'000'000ull;

/// Parses -i/--interval like parse_duration_ns ("-i/--interval" in messages) and
/// requires at least 10 ms and at most kMaxIntervalNs. Throws std::invalid_argument.
uint64_t parse_interval_ns(const std::string& s);

/// Parses "512M", "64K", "2G", "1000000" (no unit: bytes; K/M/G are powers of 1024) to
/// bytes. Throws std::invalid_argument: not a non-negative number, an unknown unit, or
/// 4 EiB and more.
uint64_t parse_size_bytes(const std::string& s, const char* what);

/// Bytes as parse_size_bytes would read them back, in powers of 1024: "100 B", "64 KiB",
/// "1.5 MiB", "2 GiB" (one decimal when not whole).
std::string format_bytes(uint64_t bytes);

/// Parses record's --start-at against now_wall_ns (CLOCK_REALTIME, ns since the epoch) to
/// the wall-clock instant the recording starts, ns since the epoch: "EPOCH" (seconds since
/// the epoch, fractions allowed, e.g. 1764650000 or 1764650000.5) or "@ALIGN" (a duration
/// as parse_duration_ns reads it, e.g. @60, @5m, @500ms: the next multiple of ALIGN since
/// the epoch strictly after now). Throws std::invalid_argument naming --start-at: not one
/// of these forms, ALIGN below 1 ms, an instant already past, or more than 7 days ahead
/// (a milliseconds epoch written by mistake).
uint64_t parse_start_at_ns(const std::string& s, uint64_t now_wall_ns);

/// A wall clock time (ns since the epoch) as "2023-11-14 22:13:20 UTC".
std::string format_utc_time(uint64_t wall_ns);

/// A rate (events/s) in at most 6 characters: "0", "0.50", "12.5", "345", "12.3k", "1.50M".
std::string format_rate(double r);
/// A duration in ns in at most 7 characters: "850", "12.3us", "4.5ms", "1.20s".
std::string format_ns(double ns);
/// format_ns with its unit always said: "850 ns", "5120 ns", "12.3us" (for sentences).
std::string format_ns_unit(double ns);
/// Appends v with `decimals` digits after the point (0..6), byte for byte what
/// fmt::format("{:.Nf}", v) writes (the double's exact value rounded to nearest, ties to
/// even; "-0.000" for a negative value that rounds to zero): a fixed-point path for finite
/// values below 2^50 / 10^decimals (about 1.1e12 at 3 decimals), fmt's own otherwise. What
/// export's text formats write per value: fmt's exact (Dragon4) path cost most of a
/// 100-sample 8192-CPU perfetto export.
void append_fixed(std::string& out, double v, int decimals);
void append_fixed(fmt::memory_buffer& out, double v, int decimals);

/// A share (0..1) as a whole percent, "37 %"; a share above 0 that rounds to 0 is "<1 %"
/// (not "0 %", which would read as none), and one below 1 that rounds to 100 is ">99 %".
std::string format_share_pct(double share);

/// Checks that a run of dur_ns (as written: d) has a second sample at interval iv_ns
/// (written: i), which rates need. until_stopped (record): a -d written as 0 means "until
/// stopped" and passes; a positive -d that rounds to 0 ns (1e-10) is short all the same.
/// Throws std::invalid_argument "-d D is shorter than one interval (-i I): rates need two
/// samples".
void check_covers_an_interval(uint64_t dur_ns, uint64_t iv_ns, const std::string& d, const std::string& i,
                              bool until_stopped);

}  // namespace schedhot
