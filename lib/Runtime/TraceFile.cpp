//===- TraceFile.cpp - a rank's trace events as files, merged -------------===//

#include "spmdc/Runtime/AtomicFile.h"
#include "spmdc/Runtime/Trace.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace spmdc::rt::trace {

static bool writeText(const std::string &path, const std::string &text,
                      std::string &error) {
  AtomicFile file;
  return file.open(path, error) && file.write(text.data(), text.size(), error) &&
         file.commit(error);
}

bool writeRankEvents(const std::string &path, int rank, std::string &error) {
  nlohmann::json list = nlohmann::json::array();
  for (const Event &e : events()) {
    nlohmann::json event = {{"name", e.name},       {"cat", e.category},
                            {"ph", "X"},            {"pid", rank},
                            // A started collective's span (start to
                            // wait) overlaps the compute: a track of its own.
                            {"tid", std::string(e.category) == "collective_async" ? 1 : 0},
                            {"ts", e.startMicros},
                            {"dur", e.durationMicros}};
    if (!e.args.empty())
      event["args"] = nlohmann::json::parse(e.args, nullptr, false);
    list.push_back(std::move(event));
  }
  return writeText(path, nlohmann::json{{"rank", rank}, {"events", list}}.dump(),
                   error);
}

bool mergeRankEvents(const std::string &path,
                     const std::vector<std::string> &rankFiles,
                     std::string &error) {
  nlohmann::json all = nlohmann::json::array();
  double origin = -1;
  std::vector<nlohmann::json> parts;
  for (const std::string &file : rankFiles) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::json part = nlohmann::json::parse(text.str(), nullptr, false);
    if (!in || part.is_discarded() || !part.contains("events")) {
      error = file + ": cannot read a rank's trace events";
      return false;
    }
    for (const auto &e : part["events"])
      if (origin < 0 || e["ts"].get<double>() < origin)
        origin = e["ts"].get<double>();
    parts.push_back(std::move(part));
  }
  // Times from the first event, and a name per track.
  for (const nlohmann::json &part : parts) {
    int rank = part["rank"].get<int>();
    all.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank},
                   {"args", {{"name", "rank " + std::to_string(rank)}}}});
    all.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", rank},
                   {"args", {{"sort_index", rank}}}});
    for (nlohmann::json e : part["events"]) {
      e["ts"] = e["ts"].get<double>() - origin;
      all.push_back(std::move(e));
    }
  }
  // Where the times start on CLOCK_MONOTONIC, so that other records of
  // the run on that clock (`perf record -k 1`) can be lined up with them.
  nlohmann::json clock = {{"clock", "CLOCK_MONOTONIC"},
                          {"origin_us", origin < 0 ? 0 : origin}};
  if (!writeText(path,
                 nlohmann::json{{"traceEvents", all},
                                {"displayTimeUnit", "ms"},
                                {"otherData", clock}}
                     .dump(1),
                 error))
    return false;
  for (const std::string &file : rankFiles)
    std::remove(file.c_str());
  return true;
}

} // namespace spmdc::rt::trace
