// `posenc bench --kernel lib.so`: a plugin's kernels timed on posenc_bench's cases (bench/), each
// beside posenc's optimized implementation and the memory roof measured in the same run, the
// plugin's calls running in its isolated child as `posenc validate --kernel` runs them.
#pragma once

#include <optional>
#include <string>

namespace posenc::tools {

struct BenchOptions {
  std::string kernel;                  // the plugin library
  std::string family;                  // only this family; "" for every family the plugin has
  std::string filter;                  // only rows whose name matches (ECMAScript regex)
  std::optional<int> threads;          // only this thread count; default 1 and 2
  int repetitions = 1;                 // Google Benchmark's; the table shows medians
  double min_time = 0.5;               // seconds per row (Google Benchmark's --benchmark_min_time)
  bool smoke = false;                  // posenc_bench's tiny shapes
  double call_timeout = 10;            // seconds, per plugin kernel call
  std::optional<double> memory_limit;  // GiB per plugin child
  std::string out;                     // also write the table as JSON here
};

// Prints Google Benchmark's rows as they run, then one line per plugin kernel, case and thread
// count. Exit status: 0 every row ran, 1 a plugin kernel was wrong or failed on some case, 2 a
// usage or load error (the message names the argument and its value).
int bench_kernels(const BenchOptions& options);

}  // namespace posenc::tools
