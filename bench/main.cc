// posenc_bench: the roof rows, then every family's cases over every registered implementation.
// Takes Google Benchmark's flags plus --posenc_smoke (tiny shapes, for CI).
#include <cstdio>
#include <cstring>

#include "bench/bench.h"

int main(int argc, char** argv) {
  // Take our own flag out before Google Benchmark sees the rest.
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--posenc_smoke") == 0)
      posenc::bench::set_smoke(true);
    else
      argv[kept++] = argv[i];
  }
  argc = kept;

  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  try {
    posenc::bench::budget_seconds();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "posenc_bench: %s\n", e.what());
    return 2;
  }
  benchmark::AddCustomContext("cpu", posenc::bench::cpu_name());
  benchmark::AddCustomContext("posenc_smoke", posenc::bench::smoke() ? "true" : "false");
  posenc::bench::register_roof_rows();
  posenc::bench::register_pool_rows();
  posenc::bench::register_families();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return posenc::bench::any_failure() ? 1 : 0;
}
