//===- Logging.h - spdlog set-up shared by the tools ------------*- C++ -*-===//

#ifndef SPMDC_SUPPORT_LOGGING_H
#define SPMDC_SUPPORT_LOGGING_H

#include <string>

namespace spmdc {

/// Sends logs to stderr (never stdout, which carries IR or `step` lines) at
/// `level`: trace, debug, info, warn or error. False for an unknown level.
bool setupLogging(const std::string &toolName, const std::string &level);

} // namespace spmdc

#endif // SPMDC_SUPPORT_LOGGING_H
