// posenc::Error: the one exception type for bad input. It names the argument and its value, and
// every kernel raises it before writing any output byte.
#pragma once

#include <stdexcept>
#include <string>

namespace posenc {

class Error : public std::invalid_argument {
 public:
  Error(std::string argument, std::string value, std::string requirement);

  const std::string& argument() const { return argument_; }
  const std::string& value() const { return value_; }
  const std::string& requirement() const { return requirement_; }

 private:
  std::string argument_, value_, requirement_;
};

// Throws Error unless `ok`. The value is formatted with std::to_string-like rules.
void require(bool ok, const std::string& argument, double value, const std::string& requirement);
void require(bool ok, const std::string& argument, const std::string& value,
             const std::string& requirement);

// require() that formats its argument, value and requirement only when `ok` is false, and out of
// line: a kernel's validation then costs comparisons, not string building, on every valid call.
#define POSENC_REQUIRE(ok, ...)                                                        \
  do {                                                                                 \
    if (__builtin_expect(!(ok), 0)) {                                                  \
      [&]() __attribute__((cold, noinline)) { ::posenc::require(false, __VA_ARGS__); } \
      ();                                                                              \
    }                                                                                  \
  } while (0)

}  // namespace posenc
