#include "cli/options.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "analysis/report.h"
#include "output/format.h"
#include "sys/cpulist.h"
#include "tui/screen.h"
#include "tui/terminal.h"

namespace schedhot::cli {

void add_probe_options(CLI::App* c, CommonProbeOptions& o) {
  c->add_option("--backend", o.backend,
                 "auto (fentry, then kprobe, then a tracepoint proxy) | fentry | kprobe | proxy (stand-ins only)")
      ->check(CLI::IsMember({"auto", "fentry", "kprobe", "proxy"}));
  c->add_option("--probes", o.probes, "comma-separated probes to attach, or all (the default)")->check(kNotEmpty);
  c->add_option("--system-map", o.system_map, "System.map of the running kernel, for tick_broadcast_lock's address")->check(kNotEmpty);
  c->add_option("--btf", o.btf,
                "vmlinux BTF of the running kernel (raw BTF or an ELF vmlinux), when not at /sys/kernel/btf/vmlinux")
      ->check(kNotEmpty);
  c->add_flag("-v,--verbose", o.verbose, "print libbpf and verifier messages");
  CLI::Option* on = c->add_flag_callback("--gap-state", [&o] { o.gap_state = true; },
                                         "the probes keep per-CPU gap histograms, sampled, for the cacheline figures' "
                                         "gap model (the default)");
  c->add_flag_callback("--no-gap-state", [&o] { o.gap_state = false; },
                       "no gap state: the cacheline figures are the independent-arrivals model's")
      ->excludes(on);
  c->add_option("--gap-samples", o.gap_samples,
                "gap samples per second per CPU the gap state aims at (default 4000; 0: every event, the exact "
                "gaps at the full cost per event)")
      ->check(CLI::Range(0, 1'000'000));
  // --gap-samples without a gap state would be silently ignored: refused instead
  c->parse_complete_callback([c, &o] {
    if (!o.gap_state && c->count("--gap-samples"))
      throw CLI::ValidationError("--gap-samples", "has no effect with --no-gap-state");
  });
}

const CLI::Validator kNotEmpty([](std::string& s) -> std::string { return s.empty() ? "must not be empty" : ""; }, "",
                               "not empty");

void add_catch_options(CLI::App* c, CommonProbeOptions& o) {
  CLI::Option* rules = c->add_option("--catch", o.catch_rules,
                                     "catch tail events with their stacks, tasks and interrupt time: PROBE>DURATION or "
                                     "PROBE>pNN, comma-separated (cpupri_set>20us,idle>p99)")
                           ->check(kNotEmpty);
  c->add_option("--catch-rate", o.catch_per_sec, "caught events per CPU per second per rule, at most (default 100; "
                                                  "the others are counted as dropped)")
      ->check(CLI::Range(1, 1'000'000))
      ->needs(rules);
}


void add_view_options(CLI::App* c, std::string& sort, std::string& cpus, std::string& xfer_cost) {
  c->add_option("--sort", sort, "initial sort column: a probe or column name, or cpu (default idle)");
  c->add_option("--cpus", cpus, "initial CPU filter, e.g. 0-7,16 (default: all)")->check(kNotEmpty);
  c->add_option("--xfer-cost", xfer_cost, "ns per cacheline transfer by distance, e.g. smt=15,llc=40,package=80,remote=150")->check(kNotEmpty);
}

const CLI::Validator kCount(
    [](std::string& s) -> std::string {
      long long v = -1;
      size_t used = 0;
      try {
        v = std::stoll(s, &used);
      } catch (...) {
        used = 0;
      }
      if (used != s.size() || v < 0 || v > 1'000'000) return "must be a whole number from 0 to 1000000, not '" + s + "'";
      return "";
    },
    "N");

void add_format_options(CLI::App* c, FormatOptions& o, const char* schema, const char* also, const char* also_when) {
  std::vector<std::string> names = format_names(schema);
  std::string help = format_choices_text(schema);
  if (also) {
    for (const std::string& n : format_names(also))
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    help += fmt::format("; {}: {}", also_when, format_choices_text(also));
  }
  c->add_option("--format", o.format, help)->check(CLI::IsMember(names));
  c->add_flag("--json", o.json, fmt::format("JSON output (schema {}{}); --format json", schema, also ? fmt::format(", {} {}", also_when, also) : ""));
}


int parse_window(const std::string& from, const std::string& to, double& from_s, double& to_s, const char* side) {
  from_s = to_s = -1;
  const std::string from_name = side ? fmt::format("{} FROM", side) : "--from";
  const std::string to_name = side ? fmt::format("{} TO", side) : "--to";
  try {
    if (!from.empty()) from_s = static_cast<double>(parse_duration_ns(from, from_name.c_str())) / 1e9;
    if (!to.empty()) to_s = static_cast<double>(parse_duration_ns(to, to_name.c_str())) / 1e9;
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  if (from_s >= 0 && to_s >= 0 && to_s <= from_s) {
    return usage_error(fmt::format("{} must be later than {}", to_name, from_name));
  }
  return 0;
}

int parse_rotation(const std::string& max_size, int rotate, const std::string& output, RotateOptions& out) {
  out = RotateOptions{};
  if (max_size.empty()) {
    if (rotate >= 0) {
      return usage_error("--rotate needs --max-size SIZE");
    }
    return 0;
  }
  if (rotate < 0) {
    return usage_error("--max-size needs --rotate N (closed files to keep as FILE.1 .. FILE.N; 0 keeps none)");
  }
  if (rotate > 1000) {
    return usage_error("--rotate: at most 1000 closed files");
  }
  if (output == "-") {
    return usage_error("--max-size: rotation needs -o FILE, not stdout");
  }
  try {
    out.max_bytes = parse_size_bytes(max_size, "--max-size");
  } catch (const std::exception& e) {
    return usage_error(e.what());
  }
  if (out.max_bytes < (64u << 10)) {
    return usage_error(fmt::format("--max-size {}: at least 64K (a file holds the metadata and at least one sample)", max_size));
  }
  out.keep = static_cast<unsigned>(rotate);
  return 0;
}

bool covers_an_interval(uint64_t dur_ns, uint64_t iv_ns, const std::string& d, const std::string& i,
                        bool until_stopped) {
  try {
    check_covers_an_interval(dur_ns, iv_ns, d, i, until_stopped);
    return true;
  } catch (const std::invalid_argument& e) {
    usage_error(e.what());
    return false;
  }
}

bool parse_view_options(const std::string& sort, const std::string& cpus, const std::string& xfer_cost,
                        tui::TuiOptions& out) {
  out.sort_col = tui::find_column(sort);
  if (out.sort_col < 0) {
    std::string names = "cpu";
    for (auto& c : cpu_columns()) names += fmt::format(", {}", c.header);
    usage_error(fmt::format("--sort: no column '{}' (a probe name or one of: {})", sort, names));
    return false;
  }
  try {
    out.filter = cpus.empty() ? std::vector<int>{} : parse_cpulist(cpus);
  } catch (const std::invalid_argument& e) {
    usage_error(fmt::format("--cpus: {}", e.what()));
    return false;
  }
  try {
    if (!xfer_cost.empty()) out.xfer_cost = parse_xfer_cost(xfer_cost);
  } catch (const std::invalid_argument& e) {
    usage_error(e.what());
    return false;
  }
  out.parse_time = [](const std::string& s) { return parse_duration_ns(s, "time"); };
  out.utf8 = tui::utf8_locale();
  return true;
}

}  // namespace schedhot::cli
