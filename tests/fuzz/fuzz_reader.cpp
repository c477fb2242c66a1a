// libFuzzer target: the recording reader (and the views that read recordings) on
// arbitrary bytes. Build: cmake -DSCHEDHOT_FUZZER=ON with clang (tests/CMakeLists.txt
// does it in build/fuzz for the `fuzz_reader` CTest).
//
// Input: one mode byte, then the file's bytes. Mode bit 0 set: before reading, the
// harness recomputes the file header's and every frame's CRC32C, so mutations get past
// the checksums into the decoders (zstd, varints, META JSON, INDEX/END); clear: the
// bytes are read as they are, which exercises CRC failures and the damage paths.
//
// Any exception other than std::runtime_error (the reader's one-line refusal), any
// crash, leak or undefined behaviour is a finding.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "store/crc32c.h"
#include "store/recording.h"
#include "command/export.h"
#include "analysis/info.h"
#include "output/info_text.h"

using namespace schedhot;

namespace {

uint32_t get32(const std::string& b, size_t at) {
  uint32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

void fix_crcs(std::string& b) {
  if (b.size() < kFileHeaderBytes || std::memcmp(b.data(), "SCHEDHOT", 8) != 0) return;
  uint32_t crc = crc32c(b.data(), 28);
  std::memcpy(b.data() + 28, &crc, 4);
  size_t at = get32(b, 12);
  if (at < kFileHeaderBytes || at > 4096) return;
  while (at + kFrameHeaderBytes <= b.size() && get32(b, at) == 0x52464853) {
    const size_t len = get32(b, at + 4);
    if (len > b.size() - at - kFrameHeaderBytes) return;
    uint32_t c = crc32c(b.data() + at + 4, 8);
    c = crc32c(b.data() + at + 16, 8, c);
    c = crc32c(b.data() + at + kFrameHeaderBytes, len, c);
    std::memcpy(b.data() + at + 12, &c, 4);
    at += kFrameHeaderBytes + len;
  }
}

void exercise(const std::string& path) {
  auto r = RecordingReader::open(path);
  Sample s;
  for (int n = 0; n < 4096 && r->next(s); ++n) {
  }
  const auto& pos = r->sample_positions();
  (void)r->sample_count();
  if (!pos.empty()) {
    if (r->seek_sample(pos.size() / 2)) r->next(s);
    if (r->seek_time(pos.back().mono_ns)) r->next(s);
    r->seek_time(pos.front().mono_ns + 1);
  }
  // The views, on recordings small enough to stay fast.
  if (uint64_t(r->meta().ncpus) * r->meta().probes.size() <= 256 && r->seek_sample(0)) {
    std::ostringstream out;
    ExportOptions o;
    o.format = static_cast<ExportFormat>(pos.size() % 3);
    export_samples(*r, out, o, [] { return SourceInfo{}; });
  }
  auto again = RecordingReader::open(path);
  render_info_text(recording_info(*again, path));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) fix_crcs(bytes);
  int fd = memfd_create("schedhot-fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  if (::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size())) {
    try {
      exercise(fmt::format("/proc/self/fd/{}", fd));
    } catch (const std::runtime_error&) {
    }
  }
  ::close(fd);
  return 0;
}
