// load(): the table read in a child (server.h), each kernel an Impl whose run() goes through the
// library's Host (host.h).
#include "plugin/loader.h"

#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#include "plugin/host.h"
#include "plugin/isolate.h"
#include "plugin/server.h"
#include "posenc/conventions.h"

namespace posenc::plugin {

namespace {

template <class T>
struct CallOf;
template <class Call>
struct CallOf<std::vector<Impl<Call>>> {
  using type = Call;
};

// A table's variants with its conventions (POSENC_CONVENTION_*, restrictions) as the bits of what
// it accepts (posenc/conventions.h); the table's own bits there, which the ABI leaves undefined,
// are dropped. A version 1 or 2 kernel declares none (0): it accepts every convention.
uint64_t accepted(uint64_t variants, uint32_t conventions) {
  variants &= ~(variant::all_conventions | variant::conventions_declared);
  variants |= variant::conventions_declared;
  if (!(conventions & POSENC_CONVENTION_FINITE_INPUTS)) variants |= variant::nonfinite_inputs;
  if (!(conventions & POSENC_CONVENTION_POSITIONS_I64)) variants |= variant::positions_i32;
  if (!(conventions & POSENC_CONVENTION_POSITIONS_I32)) variants |= variant::positions_i64;
  if (!(conventions & POSENC_CONVENTION_YARN_TRUNCATE_ONLY)) variants |= variant::yarn_untruncated;
  return variants;
}

template <class Call>
void add_kernel(std::vector<Impl<Call>>& to, std::vector<Repeated<Call>>& repeated, Source source,
                const std::shared_ptr<Host>& host, uint32_t flags, uint64_t variants, Bound bound,
                int64_t max_position) {
  auto shared = std::make_shared<const Source>(std::move(source));
  repeated.push_back([shared, host](const Call& call, uint32_t calls) {
    run_kernel(*shared, *host, call, calls);
  });
  to.push_back({.name = shared->impl,
                .variants = variants,
                .bound = bound,
                .run = [shared, host](const Call& call) { run_kernel(*shared, *host, call); },
                .unavailable = nullptr,
                .threaded = (flags & POSENC_KERNEL_THREADED) != 0,
                .max_position = max_position});
}

}  // namespace

size_t Plugin::size() const {
  return std::apply([](const auto&... lists) { return (lists.size() + ...); }, kernels_);
}

Plugin load(const std::string& path, const Options& options) {
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr)
    throw LoadError("cannot open plugin " + path + ": " + std::strerror(errno));
  Plugin plugin;
  plugin.path_ = resolved;
  const Isolated probe =
      run_isolated([&] { return read_table(plugin.path_); }, options.timeout, options.memory_limit);
  if (probe.status == Isolated::Status::threw)
    throw LoadError("cannot load plugin " + path + ": " + probe.error);
  if (!probe.ok())
    throw LoadError("cannot load plugin " + path + ": it " +
                    (probe.status == Isolated::Status::timed_out ? "hung"
                     : probe.status == Isolated::Status::broke   ? "failed"
                                                                 : "crashed") +
                    " while loading: " + probe.describe());
  try {  // the table's bytes came from the child: check them again here
    read_kernels(plugin, probe.result, options);
  } catch (const std::runtime_error& e) {
    throw LoadError("cannot load plugin " + path + ": its table arrived malformed (" + e.what() +
                    ")");
  }
  return plugin;
}

void read_kernels(Plugin& plugin, const std::string& bytes, const Options& options) {
  WireReader table(bytes);
  const auto count = table.get<uint32_t>();
  if (count > kMaxKernels) throw std::runtime_error(std::to_string(count) + " kernels");
  // one child for all its kernels
  const auto host = std::make_shared<Host>(plugin.path_, options.memory_limit);
  for (uint32_t i = 0; i < count; ++i) {
    Source source{.path = plugin.path_, .kernel = table.get_string(), .index = i};
    source.timeout = options.timeout;
    const auto family = table.get<uint32_t>();
    const auto flags = table.get<uint32_t>();
    const auto declared = table.get<uint64_t>();
    const auto f32 = table.get<double>(), bf16 = table.get<double>(), f16 = table.get<double>();
    const auto max_position = table.get<int64_t>();
    const auto variants = accepted(declared, table.get<uint32_t>());
    // 0 for bf16 or f16: version 1's rule (posenc/plugin.h), an unset Bound field.
    auto stated = [](double b) { return b > 0 ? std::optional<double>(b) : std::nullopt; };
    const Bound bound(f32, stated(bf16), stated(f16));
    if (family >= POSENC_FAMILY_COUNT || source.kernel.empty() || source.kernel.size() > kMaxName)
      throw std::runtime_error("kernel #" + std::to_string(i) + " is not what the child checked");
    source.impl = std::string(family_name(static_cast<Family>(family))) + "/" + source.kernel;
    std::apply(
        [&](auto&... lists) {
          auto add = [&](auto& list) {
            using Call = typename CallOf<std::decay_t<decltype(list)>>::type;
            if (static_cast<uint32_t>(Call::kFamily) == family)
              add_kernel(list, std::get<std::vector<Repeated<Call>>>(plugin.repeated_), source,
                         host, flags, variants, bound, max_position);
          };
          (add(lists), ...);
        },
        plugin.kernels_);
  }
  if (!table.done()) throw std::runtime_error("bytes after its end");
}

}  // namespace posenc::plugin
