#include "posenc/error.h"

#include <cmath>
#include <cstdio>

namespace posenc {

namespace {

std::string message(const std::string& argument, const std::string& value,
                    const std::string& requirement) {
  std::string m = "invalid argument ";
  m.append(argument).append(" = ").append(value).append(": ").append(requirement);
  return m;
}

}  // namespace

Error::Error(std::string argument, std::string value, std::string requirement)
    : std::invalid_argument(message(argument, value, requirement)),
      argument_(std::move(argument)),
      value_(std::move(value)),
      requirement_(std::move(requirement)) {}

void require(bool ok, const std::string& argument, double value, const std::string& requirement) {
  if (ok) return;
  char text[64];
  if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e18) {
    std::snprintf(text, sizeof text, "%.0f", value);
  } else {
    std::snprintf(text, sizeof text, "%.17g", value);
  }
  throw Error(argument, text, requirement);
}

void require(bool ok, const std::string& argument, const std::string& value,
             const std::string& requirement) {
  if (!ok) throw Error(argument, value, requirement);
}

}  // namespace posenc
