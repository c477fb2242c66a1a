#include "command/report.h"

#include <memory>

#include <fmt/format.h>

#include "output/format.h"
#include "store/recording.h"
#include "store/window.h"
#include "sys/json_text.h"

namespace schedhot {

CommandOutput report_command(SampleSource& src, RecordingReader* reader, const ReportRequest& req) {
  CommandOutput res;
  const ReportOptions& ro = req.opts;
  ReportBuilder b(src.meta(), ro);
  // A file with a window: when every frame passes its CRC (checked first, without
  // decoding), only the window is decoded (the cursor seeks to --from and stops after
  // --to; the builder applies the window). A damaged file is read from the start as
  // always, stopping at the first bad frame.
  WindowedCursor cur(src, reader, SampleWindow{ro.from_s, ro.to_s, src.meta().interval_ns}, WindowCheck::any_edge,
                     req.stop);
  cur.read_t0();
  if (WindowProblem p = cur.seek_start(); p.error == WindowError::none_after_from && p.span_s) {
    res.errors.push_back(fmt::format("{}: no samples at or after --from {}; the samples span +0..+{:.2f} s", req.file,
                                     req.from, *p.span_s));
    res.status = 1;
    return res;
  }
  if (!b.read(cur, reader ? req.stop : nullptr)) {  // a file: Ctrl-C ends it (live sampling stops by itself)
    res.errors.push_back("interrupted");
    res.status = 130;
    return res;
  }
  const std::optional<Damage> no_damage;
  const std::optional<Damage>& damage = reader ? reader->damage() : no_damage;
  if (b.samples() < 2) {
    const std::string what = req.file.empty() ? "live" : req.file;
    const std::string dmg = damage ? fmt::format(" (damaged at byte {}: {})", damage->offset, damage->reason) : "";
    if ((ro.from_s >= 0 || ro.to_s >= 0) && b.seen() >= 2)
      res.errors.push_back(fmt::format(
          "{}: {} sample{} in the window{}{}, need two for an interval; the samples span +0..+{:.2f} s{}", what,
          b.samples(), b.samples() == 1 ? "" : "s", req.from.empty() ? "" : " --from " + req.from,
          req.to.empty() ? "" : " --to " + req.to, b.seen_span_s(), dmg.empty() ? "" : ", where reading stopped" + dmg));
    else
      res.errors.push_back(
          fmt::format("{}: {} sample{}{}, need two for an interval", what, b.seen(), b.seen() == 1 ? "" : "s", dmg));
    res.status = 1;
    return res;
  }
  const SourceInfo info = reader ? recording_source_info(*reader, req.file) : SourceInfo{};
  nlohmann::json r = b.build(src.meta(), info);
  res.out = render_document(r, req.format);
  if (damage)
    res.errors.push_back(damage_line(req.file, *damage, "reported", b.samples()));
  return res;
}

CommandOutput report_file_command(const ReportRequest& req) {
  std::unique_ptr<RecordingReader> r;
  try {
    r = RecordingReader::open(req.file);
  } catch (const std::exception& e) {
    CommandOutput res;
    res.errors.push_back(e.what());
    res.status = 1;
    return res;
  }
  return report_command(*r, r.get(), req);
}

}  // namespace schedhot
