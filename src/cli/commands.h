// The subcommands behind src/cli/main.cpp. Each returns the process exit status:
// 0 success, 1 runtime failure (one-line message on stderr), 2 bad usage.
#pragma once
#include <atomic>
#include <string>
#include <vector>

namespace schedhot::cli {

/// Set by SIGINT/SIGTERM; every loop checks it.
extern std::atomic<bool> g_stop;
void install_signal_handlers();

/// Parses "3", "2.5", "500ms", "10s", "2m", "1h" to ns. Throws std::invalid_argument.
uint64_t parse_duration_ns(const std::string& s, const char* what);
/// Parses "512M", "2G", "1000000" to bytes. Throws std::invalid_argument.
uint64_t parse_size_bytes(const std::string& s, const char* what);

struct CommonProbeOptions {
  std::string backend = "auto";
  std::string probes;      ///< comma-separated probe names, "" = all
  std::string system_map;
  bool verbose = false;
};

struct ProbesCmd {
  CommonProbeOptions common;
  bool json = false;
};
int run_probes(const ProbesCmd& o);

struct RecordCmd {
  CommonProbeOptions common;
  std::string duration = "10";
  std::string interval = "1";
  std::string output;
  bool force = false;
  bool no_compress = false;
  bool quiet = false;
  std::string command_line;
};
int run_record(const RecordCmd& o);

struct ReportCmd {
  std::string file;
  bool live = false;
  std::string duration = "5";
  std::string interval = "1";
  CommonProbeOptions common;
  bool json = false;
  bool all_cpus = false;
  int top = 10;
  std::string sort = "idle";
  std::string from, to;
};
int run_report(const ReportCmd& o);

}  // namespace schedhot::cli
