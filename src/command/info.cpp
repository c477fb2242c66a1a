#include "command/info.h"

#include <exception>
#include <memory>

#include <fmt/format.h>

#include "store/recording.h"
#include "analysis/info.h"
#include "output/format.h"
#include "sys/json_text.h"

namespace schedhot {

CommandOutput info_command(const InfoRequest& req) {
  CommandOutput res;
  std::unique_ptr<RecordingReader> r;
  try {
    r = RecordingReader::open(req.file);
  } catch (const std::exception& e) {
    res.errors.push_back(e.what());
    res.status = 1;
    return res;
  }
  nlohmann::json j;
  try {
    j = recording_info(*r, req.file, req.stop);
  } catch (const std::exception& e) {
    res.errors.push_back(e.what());
    res.status = req.stop && req.stop->load() ? 130 : 1;
    return res;
  }
  res.out = render_document(j, req.format);
  return res;
}

}  // namespace schedhot
