#include "docgen/docgen.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <ctime>
#include <ext/stdio_filebuf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <system_error>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "sys/console.h"
#include "probe/catalog.h"
#include "analysis/report.h"

#ifndef SCHEDHOT_VERSION
#define SCHEDHOT_VERSION "dev"
#endif

namespace schedhot {

namespace {

/// What a shell may complete as an option's value (or a positional argument).
enum class Value { none, choice, probes, sort, recording, file, dir };

struct OptDoc {
  std::vector<std::string> names;  ///< "-d", "--duration"
  bool flag = false;
  std::string metavar;             ///< "DURATION"
  std::vector<std::string> choices;
  std::string desc;
  Value value = Value::none;
};

struct PosDoc {
  std::string name;  ///< "FILE"
  bool many = false;
  std::string desc;
};

struct CmdDoc {
  std::string name, desc;
  std::vector<OptDoc> opts;  ///< in --help's order, -h/--help last
  std::vector<PosDoc> pos;
};

/// The kind of value an option takes, by its long name: the completions' only table that
/// is not read from the CLI11 definitions (which say "TEXT" for all of these).
Value value_of(const std::string& cmd, const std::string& lname) {
  if (lname == "probes") return Value::probes;
  if (lname == "sort") return Value::sort;
  if (lname == "record") return Value::recording;
  if (lname == "output") return cmd == "record" ? Value::recording : Value::file;
  if (lname == "system-map" || lname == "btf") return Value::file;
  if (lname == "textfile" || lname == "fleet") return Value::dir;
  return Value::none;
}

/// "TEXT:{auto,fentry}" -> {"auto", "fentry"}: CLI::IsMember's description in the type name.
std::vector<std::string> choices_of(const CLI::Option* o) {
  const std::string t = o->get_type_name();
  std::vector<std::string> v;
  const size_t b = t.find(":{");
  if (b == std::string::npos) return v;
  const size_t e = t.find('}', b);
  std::stringstream ss(t.substr(b + 2, e == std::string::npos ? std::string::npos : e - b - 2));
  for (std::string w; std::getline(ss, w, ',');)
    if (!w.empty()) v.push_back(w);
  return v;
}

/// A flag's entry: its names as typed (-h, --help) and a description.
OptDoc flag_doc(const CLI::Option* o, std::string desc) {
  OptDoc d;
  for (auto& s : o->get_snames()) d.names.push_back("-" + s);
  for (auto& l : o->get_lnames()) d.names.push_back("--" + l);
  d.flag = true;
  d.desc = std::move(desc);
  return d;
}

std::string upper(std::string s) {
  for (char& c : s) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::vector<CmdDoc> collect(const CLI::App& app) {
  std::vector<CmdDoc> cmds;
  for (const CLI::App* sub : app.get_subcommands({})) {
    CmdDoc c{sub->get_name(), sub->get_description(), {}, {}};
    const CLI::Option* help = sub->get_help_ptr();
    for (const CLI::Option* o : sub->get_options()) {
      if (o == help) continue;
      if (o->get_positional()) {
        c.pos.push_back({upper(o->get_name(true)), o->get_items_expected_max() > 1, o->get_description()});
        continue;
      }
      OptDoc d = flag_doc(o, o->get_description());
      d.flag = o->get_expected() == 0;  // add_flag: expected(0)
      if (!d.flag) {
        const std::string l = o->get_lnames().empty() ? o->get_snames().front() : o->get_lnames().front();
        d.choices = choices_of(o);
        d.value = d.choices.empty() ? value_of(c.name, l) : Value::choice;
        d.metavar = upper(l);
      }
      c.opts.push_back(std::move(d));
    }
    if (help) c.opts.push_back(flag_doc(help, "print this command's options and exit"));
    cmds.push_back(std::move(c));
  }
  return cmds;
}

/// schedhot's own options (before a command): -h, --help, --version.
std::vector<OptDoc> top_options(const CLI::App& app) {
  std::vector<OptDoc> v;
  for (const CLI::Option* o : app.get_options()) {
    if (!o->get_positional())
      v.push_back(flag_doc(o, o == app.get_help_ptr() ? "print the commands and exit" : "print the version and exit"));
  }
  return v;
}

std::vector<std::string> probe_names() {
  std::vector<std::string> v;
  for (const ProbeSpec& p : probe_catalog()) v.push_back(p.name);
  return v;
}

/// --sort's values: cpu, every probe, every per-CPU column header (report, top, replay).
std::vector<std::string> sort_values() {
  std::vector<std::string> v{"cpu"};
  for (auto& p : probe_names()) v.push_back(p);
  for (const CpuColumn& c : cpu_columns())
    if (std::find(v.begin(), v.end(), c.header) == v.end()) v.push_back(c.header);
  return v;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string s;
  for (auto& w : v) s += (s.empty() ? "" : sep) + w;
  return s;
}

// ---- man page ------------------------------------------------------------------------

/// Text for roff: backslashes escaped, a hyphen that starts a word (an option) as \-, and
/// a leading . or ' kept from being a request.
std::string roff(const std::string& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\') {
      r += "\\e";
    } else if (c == '-' && (i == 0 || std::string(" ([{,|/\"'=").find(s[i - 1]) != std::string::npos ||
                            s[i - 1] == '-')) {
      r += "\\-";
    } else {
      r += c;
    }
  }
  if (!r.empty() && (r[0] == '.' || r[0] == '\'')) r = "\\&" + r;
  return r;
}

std::string man_option(const OptDoc& o) {
  std::string s;
  for (auto& n : o.names) s += (s.empty() ? "" : ", ") + fmt::format("\\fB{}\\fR", roff(n));
  if (!o.choices.empty()) {
    std::vector<std::string> ch;
    for (auto& c : o.choices) ch.push_back(fmt::format("\\fB{}\\fR", roff(c)));
    s += " {" + join(ch, "|") + "}";
  } else if (!o.flag) {
    s += fmt::format(" \\fI{}\\fR", o.metavar);
  }
  return s;
}

std::string man_commands(const std::vector<CmdDoc>& cmds) {
  std::string m;
  for (const CmdDoc& c : cmds) {
    std::string syn = "schedhot " + c.name + " [OPTIONS]";
    for (auto& p : c.pos) syn += " [" + p.name + (p.many ? "..." : "") + "]";
    m += fmt::format(".SS \"{}\"\n{}.\n", roff(syn), roff(c.desc));
    for (auto& p : c.pos) m += fmt::format(".TP\n\\fI{}\\fR\n{}\n", p.name + (p.many ? "..." : ""), roff(p.desc));
    for (auto& o : c.opts) m += fmt::format(".TP\n{}\n{}\n", man_option(o), roff(o.desc));
  }
  return m;
}

std::string man_probes() {
  std::string m;
  for (const ProbeSpec& p : probe_catalog())
    m += fmt::format(".TP\n\\fB{}\\fR ({})\n{}\n", roff(p.name), roff(p.target), roff(p.what));
  return m;
}

std::string man_date() {
  time_t t = std::time(nullptr);
  if (const char* e = std::getenv("SOURCE_DATE_EPOCH")) t = static_cast<time_t>(std::strtoll(e, nullptr, 10));
  char buf[32];
  struct tm tm {};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%d", &tm);
  return buf;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
}

int man_page(const CLI::App& app, const std::string& tmpl_path) {
  // The template is printed, so --docgen must not become a way to read a file the caller
  // could not (schedhot granted through sudoers, or setuid): the last path component is not
  // followed if a symlink (O_NOFOLLOW), the file is regular (O_NONBLOCK: a FIFO never
  // blocks the open) and of at most 1 MiB, and it is world-readable or owned by the real
  // user when that user is not root. The checks are on the open descriptor (no race).
  const int fd = ::open(tmpl_path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st {};
  const bool ok = fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size <= (1 << 20) &&
                  ((st.st_mode & S_IROTH) || (st.st_uid == ::getuid() && ::getuid() != 0));
  if (!ok) {
    if (fd >= 0) ::close(fd);
    say(fmt::format("--docgen man: the template '{}' is not a world-readable (or the real user's) regular file of "
                    "at most 1 MiB",
                    tmpl_path));
    return 1;
  }
  __gnu_cxx::stdio_filebuf<char> buf(fd, std::ios::in);  // closes fd
  std::stringstream ss;
  ss << &buf;
  std::string t = ss.str();
  replace_all(t, "@VERSION@", SCHEDHOT_VERSION);
  replace_all(t, "@DATE@", man_date());
  replace_all(t, "@COMMANDS@\n", man_commands(collect(app)));
  replace_all(t, "@PROBES@\n", man_probes());
  fmt::print("{}", t);
  return 0;
}

// ---- bash --------------------------------------------------------------------------

std::string bash_value(const OptDoc& o) {
  switch (o.value) {
    case Value::choice: return fmt::format("COMPREPLY=($(compgen -W '{}' -- \"$cur\"))", join(o.choices, " "));
    case Value::probes: return "_schedhot_list \"$probes\"";
    case Value::sort: return "COMPREPLY=($(compgen -W \"$sort\" -- \"$cur\"))";
    case Value::recording: return "_schedhot_recordings";
    case Value::file: return "_filedir";
    case Value::dir: return "_filedir -d";
    case Value::none: return ":";
  }
  return ":";
}

std::string bash_script(const CLI::App& app) {
  const std::vector<CmdDoc> cmds = collect(app);
  std::vector<std::string> names, top;
  for (auto& c : cmds) names.push_back(c.name);
  for (auto& o : top_options(app))
    for (auto& n : o.names) top.push_back(n);
  std::vector<std::string> probes{"all"};
  for (auto& p : probe_names()) probes.push_back(p);
  std::string s = fmt::format(R"(# bash completion for schedhot                              -*- shell-script -*-
# Written by `schedhot --docgen bash` (schedhot {}) from the command-line definitions that
# --help prints: regenerate it, do not edit it.

# Recordings: FILE.shot and its rotated FILE.shot.N, and directories.
_schedhot_recordings()
{{
    _filedir '@(shot?(.+([0-9])))'
}}

# A comma-separated list (--probes a,b): the word after the last comma.
_schedhot_list()
{{
    local prefix=${{cur%"${{cur##*,}}"}}
    COMPREPLY=($(compgen -P "$prefix" -W "$1" -- "${{cur##*,}}"))
    [[ ${{#COMPREPLY[@]}} -eq 1 ]] && compopt -o nospace
}}

_schedhot()
{{
    local cur prev words cword split
    _init_completion -s || return

    local probes='{}'
    local sort='{}'
    local cmd='' i
    for ((i = 1; i < cword; i++)); do
        if [[ ${{words[i]}} != -* ]]; then
            cmd=${{words[i]}}
            break
        fi
    done
    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W '{}' -- "$cur"))
        else
            COMPREPLY=($(compgen -W '{}' -- "$cur"))
        fi
        return
    fi

    case $cmd in
)",
                              SCHEDHOT_VERSION, join(probes, " "), join(sort_values(), " "), join(top, " "),
                              join(names, " "));
  for (const CmdDoc& c : cmds) {
    s += fmt::format("        {})\n            case $prev in\n", c.name);
    std::vector<std::string> all;
    for (const OptDoc& o : c.opts) {
      for (auto& n : o.names) all.push_back(n);
      if (o.flag) continue;
      s += fmt::format("                {})\n                    {}\n                    return\n                    ;;\n",
                       join(o.names, "|"), bash_value(o));
    }
    s += "            esac\n            $split && return\n";
    s += fmt::format("            if [[ $cur == -* ]]; then\n                COMPREPLY=($(compgen -W '{}' -- \"$cur\"))\n"
                     "                return\n            fi\n",
                     join(all, " "));
    if (!c.pos.empty()) s += "            _schedhot_recordings\n";
    s += "            ;;\n";
  }
  s += "    esac\n} &&\n    complete -F _schedhot schedhot\n\n# ex: filetype=sh\n";
  return s;
}

// ---- zsh ---------------------------------------------------------------------------

/// A description inside _arguments' [...], in a single-quoted word.
std::string zsh_desc(const std::string& d) {
  std::string r;
  for (char c : d) {
    if (c == '\'') {
      r += "'\\''";
    } else if (c == '[' || c == ']' || c == ':' || c == '\\') {
      r += '\\';
      r += c;
    } else {
      r += c;
    }
  }
  return r;
}

std::string zsh_action(const OptDoc& o) {
  const std::string msg = fmt::format(":{}:", zsh_desc(o.metavar.empty() ? "value" : o.metavar));
  switch (o.value) {
    case Value::choice: return msg + "(" + join(o.choices, " ") + ")";
    case Value::probes: return msg + "_schedhot_probe_list";
    case Value::sort: return msg + "_schedhot_sort";
    case Value::recording: return msg + "_schedhot_recordings";
    case Value::file: return msg + "_files";
    case Value::dir: return msg + "_files -/";
    case Value::none: return msg + " ";
  }
  return msg + " ";
}

std::string zsh_spec(const OptDoc& o) {
  std::vector<std::string> forms;
  for (auto& n : o.names) forms.push_back(o.flag ? n : n + (n.size() == 2 ? "+" : "="));
  const std::string body = fmt::format("[{}]{}", zsh_desc(o.desc), o.flag ? "" : zsh_action(o));
  if (forms.size() == 1) return fmt::format("'{}{}'", forms[0], body);
  return fmt::format("'({})'{{{}}}'{}'", join(o.names, " "), join(forms, ","), body);
}

std::string zsh_script(const CLI::App& app) {
  const std::vector<CmdDoc> cmds = collect(app);
  std::string top;
  for (auto& o : top_options(app)) {
    const std::string forms = o.names.size() == 1 ? o.names[0] : "'{" + join(o.names, ",") + "}'";
    top += fmt::format("    '(- *){}[{}]' \\\n", forms, zsh_desc(o.desc));
  }
  std::string s = fmt::format(R"(#compdef schedhot
# zsh completion for schedhot, written by `schedhot --docgen zsh` (schedhot {}) from the
# command-line definitions that --help prints: regenerate it, do not edit it.

_schedhot_probe_list() {{
  _values -s , probe all {}
}}

_schedhot_sort() {{
  local -a values=({})
  _describe -t sort 'sort column' values
}}

_schedhot_recordings() {{
  _files -g '*.shot(-.)' -g '*.shot.<->(-.)'
}}

_schedhot() {{
  local curcontext=$curcontext state line ret=1
  typeset -A opt_args
  _arguments -C \
{}    '1: :->command' \
    '*:: :->args' && ret=0
  case $state in
    command)
      local -a commands=(
)",
                              SCHEDHOT_VERSION, join(probe_names(), " "), join(sort_values(), " "), top);
  for (const CmdDoc& c : cmds) {
    std::string d = c.desc;
    std::string esc;
    for (char ch : d) esc += ch == '\'' ? std::string("'\\''") : ch == ':' ? std::string("\\:") : std::string(1, ch);
    s += fmt::format("        '{}:{}'\n", c.name, esc);
  }
  s += "      )\n      _describe -t commands 'schedhot command' commands && ret=0\n      ;;\n    args)\n"
       "      curcontext=${curcontext%:*:*}:schedhot-$words[1]:\n      case $words[1] in\n";
  for (const CmdDoc& c : cmds) {
    s += fmt::format("        {})\n          _arguments -s -S", c.name);
    for (const OptDoc& o : c.opts) s += " \\\n            " + zsh_spec(o);
    if (!c.pos.empty())
      s += fmt::format(" \\\n            '{}:{}:_schedhot_recordings'", c.pos.front().many ? "*" : "1",
                       zsh_desc(c.pos.front().desc));
    s += " && ret=0\n          ;;\n";
  }
  s += "      esac\n      ;;\n  esac\n  return ret\n}\n\n_schedhot \"$@\"\n";
  return s;
}

}  // namespace

namespace {

int docgen_to_stdout(const CLI::App& app, int argc, char** args) {
  const std::string what = argc > 0 ? args[0] : "";
  if (what == "man" && argc == 2) return man_page(app, args[1]);
  if (what == "bash" && argc == 1) {
    fmt::print("{}", bash_script(app));
    return 0;
  }
  if (what == "zsh" && argc == 1) {
    fmt::print("{}", zsh_script(app));
    return 0;
  }
  say("usage: schedhot --docgen man TEMPLATE | bash | zsh");
  return 2;
}

}  // namespace

int docgen(const CLI::App& app, int argc, char** args) {
  // Only under the build, which sets SCHEDHOT_DOCGEN=1 (CMakeLists.txt): sudo's default
  // env_reset drops it, so schedhot granted through sudoers never prints a template.
  const char* gate = std::getenv("SCHEDHOT_DOCGEN");
  if (!gate || std::string(gate) != "1") {
    say("--docgen is for the build (it sets SCHEDHOT_DOCGEN=1)");
    return 2;
  }
  // A write error (a full disk under a build, a closed stdout) is one line and exit 1, so a
  // build never ships a cut page: fmt::print throws it, fflush reports what was buffered.
  try {
    const int rc = docgen_to_stdout(app, argc, args);
    if (std::fflush(stdout) != 0) throw std::system_error(errno, std::generic_category());
    return rc;
  } catch (const std::system_error& e) {
    say(fmt::format("--docgen: cannot write to stdout: {}", e.code().message()));
    return 1;
  }
}

}  // namespace schedhot
