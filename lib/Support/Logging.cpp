//===- Logging.cpp - spdlog set-up shared by the tools --------------------===//

#include "spmdc/Support/Logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace spmdc {

bool setupLogging(const std::string &toolName, const std::string &level) {
  spdlog::level::level_enum parsed = spdlog::level::from_str(level);
  // from_str maps unknown names to `off`; only "off" itself may mean off.
  if (parsed == spdlog::level::off && level != "off")
    return false;
  auto logger = spdlog::stderr_color_mt(toolName);
  logger->set_pattern("%n: %^%l%$: %v");
  logger->set_level(parsed);
  spdlog::set_default_logger(logger);
  return true;
}

} // namespace spmdc
