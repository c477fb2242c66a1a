// Kernel symbol tables: /proc/kallsyms or a System.map (same "ADDR TYPE NAME [MODULE]"
// format). Knows GCC/LLVM clone suffixes (.isra.N .constprop.N .part.N .cold .llvm.N).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace schedhot {

/// One symbol. type is the nm letter: t/T text, d/D/b/B/r/R data, w/W weak.
struct Symbol {
  uint64_t addr = 0;
  char type = '?';
  std::string name;
  std::string module;  ///< "" for the core kernel
  bool is_text() const { return type == 't' || type == 'T' || type == 'w' || type == 'W'; }
};

/// The base name of a compiler clone ("foo" for "foo.isra.0", "foo.constprop.0.cold"),
/// or the name itself when it carries no clone suffix.
std::string clone_base(std::string_view name);

/// True for a partial-inlining split (".part.N" anywhere in the name): not a whole copy of
/// the function, but its tail, called from the function's head (which may be inlined into
/// callers). ".isra.N", ".constprop.N" and ".llvm.N" clones are whole copies.
bool is_partial_clone(std::string_view name);

/// A parsed symbol table with name and address lookup.
class SymbolTable {
 public:
  /// Parses kallsyms/System.map text. Lines that do not parse are skipped; "__pfx_"
  /// padding symbols are dropped.
  static SymbolTable parse(std::string_view text);
  /// Loads a file; on failure returns nullopt and sets *err to a one-line reason.
  static std::optional<SymbolTable> load(const std::string& path, std::string* err);

  size_t size() const { return syms_.size(); }
  bool empty() const { return syms_.empty(); }
  /// True when every address is 0 (kptr_restrict, or not root): names only.
  bool addresses_hidden() const { return hidden_; }

  /// Exact name in the core kernel (not a module); the first match in file order. A name
  /// may have several entries (two static functions or variables of one name in different
  /// files): use find_all() wherever picking one would be a guess.
  const Symbol* find(std::string_view name) const;
  /// Every core-kernel entry of name, one per distinct address, in file order (with hidden
  /// addresses every entry is kept: they cannot be told apart).
  std::vector<const Symbol*> find_all(std::string_view name) const;
  /// Core-kernel clones of name (e.g. name.isra.0), without the exact name and without
  /// ".cold" parts (they are not entry points). Sorted by name. ".part.N" clones are in
  /// the list too: see is_partial_clone().
  std::vector<const Symbol*> clones(std::string_view name) const;
  /// ".cold" parts split off name, for notes.
  std::vector<const Symbol*> cold_parts(std::string_view name) const;
  /// The text symbol containing addr and the offset into it, or nullopt.
  std::optional<std::pair<const Symbol*, uint64_t>> symbolize(uint64_t addr) const;
  /// "name+0xoff" or "0xaddr".
  std::string describe(uint64_t addr) const;
  /// Every parsed symbol (core kernel and modules), in file order: for scans by address
  /// range, e.g. the data symbols that share a cacheline (probe/layout.h).
  const std::vector<Symbol>& symbols() const { return syms_; }

 private:
  std::vector<Symbol> syms_;
  std::unordered_multimap<std::string, size_t> by_name_;
  std::unordered_multimap<std::string, size_t> by_base_;  ///< clone base -> clones
  std::vector<size_t> text_by_addr_;                       ///< core text symbols by address
  bool hidden_ = false;
};

}  // namespace schedhot
