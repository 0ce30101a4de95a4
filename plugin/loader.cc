#include "plugin/loader.h"

#include <dlfcn.h>
#include <sys/mman.h>

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>
#include <utility>

#include "plugin/isolate.h"
#include "plugin/mirror.h"
#include "posenc/error.h"
#include "posenc/plugin.h"

namespace posenc::plugin {

// The C header spells posenc's enums and variant bits out; they must stay the same numbers.
static_assert(POSENC_FAMILY_ATTENTION == static_cast<int>(Family::attention));
static_assert(POSENC_FAMILY_ABSOLUTE == static_cast<int>(Family::absolute));
static_assert(POSENC_FAMILY_SINUSOIDAL == static_cast<int>(Family::sinusoidal));
static_assert(POSENC_FAMILY_ROPE_FREQUENCIES == static_cast<int>(Family::rope_frequencies));
static_assert(POSENC_FAMILY_ROPE_CACHE == static_cast<int>(Family::rope_cache));
static_assert(POSENC_FAMILY_ROPE == static_cast<int>(Family::rope));
static_assert(POSENC_FAMILY_ALIBI == static_cast<int>(Family::alibi));
static_assert(POSENC_FAMILY_T5 == static_cast<int>(Family::t5));
static_assert(POSENC_VARIANT_F32 == variant::f32 && POSENC_VARIANT_BF16 == variant::bf16 &&
              POSENC_VARIANT_F16 == variant::f16 && POSENC_VARIANT_STRIDED == variant::strided &&
              POSENC_VARIANT_IN_PLACE == variant::in_place);
static_assert(POSENC_VARIANT_ATTENTION_CAUSAL == variant::attention_causal &&
              POSENC_VARIANT_ATTENTION_BIAS == variant::attention_bias &&
              POSENC_VARIANT_ATTENTION_GQA == variant::attention_gqa &&
              POSENC_VARIANT_ATTENTION_POSITIONS == variant::attention_positions);
static_assert(POSENC_VARIANT_SINUSOIDAL_ADD == variant::sinusoidal_add &&
              POSENC_VARIANT_SINUSOIDAL_POSITIONS == variant::sinusoidal_positions);
static_assert(POSENC_VARIANT_ROPE_HALF_SPLIT == variant::rope_half_split &&
              POSENC_VARIANT_ROPE_INTERLEAVED == variant::rope_interleaved &&
              POSENC_VARIANT_ROPE_PARTIAL == variant::rope_partial &&
              POSENC_VARIANT_ROPE_INVERSE == variant::rope_inverse &&
              POSENC_VARIANT_ROPE_CACHED == variant::rope_cached &&
              POSENC_VARIANT_ROPE_KEY == variant::rope_key);
static_assert(POSENC_VARIANT_ALIBI_CAUSAL == variant::alibi_causal &&
              POSENC_VARIANT_ALIBI_SLOPES == variant::alibi_slopes);
static_assert(POSENC_VARIANT_T5_BIDIRECTIONAL == variant::t5_bidirectional &&
              POSENC_VARIANT_T5_CAUSAL == variant::t5_causal);
static_assert(POSENC_SCALING_NONE == static_cast<int>(RopeScalingKind::none) &&
              POSENC_SCALING_LINEAR == static_cast<int>(RopeScalingKind::linear) &&
              POSENC_SCALING_NTK == static_cast<int>(RopeScalingKind::ntk) &&
              POSENC_SCALING_DYNAMIC_NTK == static_cast<int>(RopeScalingKind::dynamic_ntk) &&
              POSENC_SCALING_YARN == static_cast<int>(RopeScalingKind::yarn) &&
              POSENC_SCALING_LLAMA3 == static_cast<int>(RopeScalingKind::llama3) &&
              POSENC_SCALING_LONGROPE == static_cast<int>(RopeScalingKind::longrope));
static_assert(POSENC_VARIANT_SCALING(POSENC_SCALING_NONE) ==
                  variant::scaling_bit(RopeScalingKind::none) &&
              POSENC_VARIANT_SCALING(POSENC_SCALING_LONGROPE) ==
                  variant::scaling_bit(RopeScalingKind::longrope));
static_assert(POSENC_LAYOUT_HALF_SPLIT == static_cast<int>(RopeLayout::half_split) &&
              POSENC_LAYOUT_INTERLEAVED == static_cast<int>(RopeLayout::interleaved));
static_assert(POSENC_MASK_NONE == static_cast<int>(Mask::none) &&
              POSENC_MASK_CAUSAL == static_cast<int>(Mask::causal));

namespace {

constexpr uint32_t kMaxKernels = 4096;

template <class T>
struct CallOf;
template <class Call>
struct CallOf<std::vector<Impl<Call>>> {
  using type = Call;
};
constexpr size_t kMaxName = 64;

// ---- Calls as C arguments ----

DLDataType dlpack_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return {kDLFloat, 32, 1};
    case DType::f64:
      return {kDLFloat, 64, 1};
    case DType::bf16:
      return {kDLBfloat, 16, 1};
    case DType::f16:
      return {kDLFloat, 16, 1};
    case DType::i32:
      return {kDLInt, 32, 1};
    case DType::i64:
      return {kDLInt, 64, 1};
  }
  return {kDLOpaqueHandle, 0, 0};
}

// Small objects of one call (the argument struct, its DLTensors, their shapes and strides, the
// scaling factors) in pages of shared memory, where the worker reads them at the same addresses.
class Block {
 public:
  explicit Block(SharedMemory& memory) : memory_(memory) {}

  template <class T>
  T* put(const T& value) {
    return new (allocate(sizeof(T), alignof(T))) T(value);
  }
  // A copy of n elements; null for none, as an empty vector's data may be.
  template <class T>
  const T* copy(const T* data, size_t n) {
    if (n == 0) return nullptr;
    T* to = static_cast<T*>(allocate(sizeof(T) * n, alignof(T)));
    std::copy(data, data + n, to);
    return to;
  }
  const std::vector<std::pair<uint8_t*, size_t>>& chunks() const { return chunks_; }

 private:
  void* allocate(size_t bytes, size_t align) {
    size_t at = (used_ + align - 1) / align * align;
    if (chunks_.empty() || at + bytes > chunks_.back().second) {
      const size_t size = std::max<size_t>(size_t{64} << 10, bytes);
      uint8_t* chunk = memory_.allocate(size);
      if (chunk == nullptr)
        throw KernelFailure("the call's tensors do not fit in " +
                            std::to_string(memory_.size() >> 20) + " MiB of shared memory");
      chunks_.emplace_back(chunk, size);
      at = 0;
    }
    used_ = at + bytes;
    return chunks_.back().first + at;
  }

  SharedMemory& memory_;
  std::vector<std::pair<uint8_t*, size_t>> chunks_;
  size_t used_ = 0;
};

// The DLTensors of one call, in the block. Each view is registered with the mirror; map() mirrors
// them all and then fills in the DLTensors, whose addresses the argument struct already holds.
class Tensors {
 public:
  Tensors(SharedMemory& memory, Block& block) : mirror_(&memory), block_(block) {}

  const DLTensor* operator()(const char* name, Tensor& view) {
    mirror_.add(name, view);
    DLTensor* dl = block_.put(DLTensor{});
    entries_.emplace_back(&view, dl);
    return dl;
  }
  const DLTensor* operator()(const char* name, std::optional<Tensor>& view) {
    return view ? (*this)(name, *view) : nullptr;
  }
  void map() {
    mirror_.map();
    for (auto& [view, dl] : entries_) {
      // All kMaxRank entries, whatever the rank says: a bad-input rank stays readable.
      *dl = {
          .data = view->data,
          .device = {kDLCPU, 0},
          .ndim = view->rank,
          .dtype = dlpack_dtype(view->dtype),
          .shape = const_cast<int64_t*>(block_.copy(view->shape.data(), view->shape.size())),
          .strides = const_cast<int64_t*>(block_.copy(view->strides.data(), view->strides.size())),
          .byte_offset = 0};
    }
  }
  Mirror& mirror() { return mirror_; }
  Block& block() { return block_; }

 private:
  Mirror mirror_;
  Block& block_;
  std::vector<std::pair<Tensor*, DLTensor*>> entries_;
};

posenc_rope_scaling c_scaling(const RopeScaling& s, Block& block) {
  return {.kind = static_cast<int32_t>(s.kind),
          .factor = s.factor,
          .alpha = s.alpha,
          .max_position = s.max_position,
          .original_max_position = s.original_max_position,
          .seq_len = s.seq_len,
          .beta_fast = s.beta_fast,
          .beta_slow = s.beta_slow,
          .mscale = s.mscale,
          .mscale_all_dim = s.mscale_all_dim,
          .truncate = s.truncate,
          .low_freq_factor = s.low_freq_factor,
          .high_freq_factor = s.high_freq_factor,
          .short_factor = block.copy(s.short_factor.data(), s.short_factor.size()),
          .short_factor_size = static_cast<int64_t>(s.short_factor.size()),
          .long_factor = block.copy(s.long_factor.data(), s.long_factor.size()),
          .long_factor_size = static_cast<int64_t>(s.long_factor.size()),
          .attention_factor = s.attention_factor};
}

// One c_args and one invoke per family: the Call's fields, in the C struct's order.
posenc_attention_args c_args(AttentionCall& c, Tensors& t) {
  return {.q = t("q", c.q),
          .k = t("k", c.k),
          .v = t("v", c.v),
          .out = t("out", c.out),
          .mask = static_cast<int32_t>(c.mask),
          .q_positions = t("q_positions", c.q_positions),
          .k_positions = t("k_positions", c.k_positions),
          .bias = t("bias", c.bias),
          .scale = c.scale,
          .threads = c.threads};
}
posenc_absolute_args c_args(AbsoluteCall& c, Tensors& t) {
  return {.x = t("x", c.x),
          .table = t("table", c.table),
          .positions = t("positions", c.positions),
          .out = t("out", c.out),
          .threads = c.threads};
}
posenc_sinusoidal_args c_args(SinusoidalCall& c, Tensors& t) {
  return {.out = t("out", c.out),
          .x = t("x", c.x),
          .positions = t("positions", c.positions),
          .base = c.base,
          .threads = c.threads};
}
posenc_rope_frequencies_args c_args(RopeFrequenciesCall& c, Tensors& t) {
  return {.rotary_dim = c.rotary_dim,
          .base = c.base,
          .scaling = c_scaling(c.scaling, t.block()),
          .inv_freq = t("inv_freq", c.inv_freq),
          .attention_factor = t("attention_factor", c.attention_factor),
          .threads = c.threads};
}
posenc_rope_cache_args c_args(RopeCacheCall& c, Tensors& t) {
  return {.rotary_dim = c.rotary_dim,
          .base = c.base,
          .scaling = c_scaling(c.scaling, t.block()),
          .cos = t("cos", c.cos),
          .sin = t("sin", c.sin),
          .threads = c.threads};
}
posenc_rope_args c_args(RopeCall& c, Tensors& t) {
  return {.q = t("q", c.q),
          .q_out = t("q_out", c.q_out),
          .k = t("k", c.k),
          .k_out = t("k_out", c.k_out),
          .positions = t("positions", c.positions),
          .rotary_dim = c.rotary_dim,
          .layout = static_cast<int32_t>(c.layout),
          .inverse = c.inverse,
          .base = c.base,
          .scaling = c_scaling(c.scaling, t.block()),
          .cos = t("cos", c.cos),
          .sin = t("sin", c.sin),
          .threads = c.threads};
}
posenc_alibi_args c_args(AlibiCall& c, Tensors& t) {
  return {.n_heads = c.n_heads,
          .max_bias = c.max_bias,
          .causal = c.causal,
          .q_positions = t("q_positions", c.q_positions),
          .k_positions = t("k_positions", c.k_positions),
          .bias = t("bias", c.bias),
          .slopes = t("slopes", c.slopes),
          .threads = c.threads};
}
posenc_t5_args c_args(T5Call& c, Tensors& t) {
  return {.bidirectional = c.bidirectional,
          .n_buckets = c.n_buckets,
          .max_distance = c.max_distance,
          .q_positions = t("q_positions", c.q_positions),
          .k_positions = t("k_positions", c.k_positions),
          .table = t("table", c.table),
          .bias = t("bias", c.bias),
          .threads = c.threads};
}

// Runs kernel k on the argument struct of its family at `args`.
int invoke(const posenc_kernel& k, const void* args, posenc_error* e) {
  switch (k.family) {
    case POSENC_FAMILY_ATTENTION:
      return k.run.attention(static_cast<const posenc_attention_args*>(args), e);
    case POSENC_FAMILY_ABSOLUTE:
      return k.run.absolute(static_cast<const posenc_absolute_args*>(args), e);
    case POSENC_FAMILY_SINUSOIDAL:
      return k.run.sinusoidal(static_cast<const posenc_sinusoidal_args*>(args), e);
    case POSENC_FAMILY_ROPE_FREQUENCIES:
      return k.run.rope_frequencies(static_cast<const posenc_rope_frequencies_args*>(args), e);
    case POSENC_FAMILY_ROPE_CACHE:
      return k.run.rope_cache(static_cast<const posenc_rope_cache_args*>(args), e);
    case POSENC_FAMILY_ROPE:
      return k.run.rope(static_cast<const posenc_rope_args*>(args), e);
    case POSENC_FAMILY_ALIBI:
      return k.run.alibi(static_cast<const posenc_alibi_args*>(args), e);
    case POSENC_FAMILY_T5:
      return k.run.t5(static_cast<const posenc_t5_args*>(args), e);
  }
  throw LoadError("family " + std::to_string(k.family) + " is not a posenc family");
}

bool has_function(const posenc_kernel& k) {
  switch (k.family) {
    case POSENC_FAMILY_ATTENTION:
      return k.run.attention != nullptr;
    case POSENC_FAMILY_ABSOLUTE:
      return k.run.absolute != nullptr;
    case POSENC_FAMILY_SINUSOIDAL:
      return k.run.sinusoidal != nullptr;
    case POSENC_FAMILY_ROPE_FREQUENCIES:
      return k.run.rope_frequencies != nullptr;
    case POSENC_FAMILY_ROPE_CACHE:
      return k.run.rope_cache != nullptr;
    case POSENC_FAMILY_ROPE:
      return k.run.rope != nullptr;
    case POSENC_FAMILY_ALIBI:
      return k.run.alibi != nullptr;
    case POSENC_FAMILY_T5:
      return k.run.t5 != nullptr;
  }
  return false;
}

// ---- The library, opened in a child ----

// Opens the library and returns its table, or throws LoadError. Only ever runs in a child.
const posenc_plugin& open_table(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw LoadError(dlerror());
  using TableFn = const posenc_plugin* (*)();
  auto table_fn = reinterpret_cast<TableFn>(dlsym(handle, POSENC_PLUGIN_SYMBOL));
  if (table_fn == nullptr)
    throw LoadError("it does not export " POSENC_PLUGIN_SYMBOL
                    "() (declare it with POSENC_PLUGIN_EXPORT, from posenc/plugin.h)");
  const posenc_plugin* table = table_fn();
  if (table == nullptr) throw LoadError(POSENC_PLUGIN_SYMBOL "() returned NULL");
  if (table->abi_version != POSENC_PLUGIN_ABI_VERSION)
    throw LoadError("ABI version mismatch: the library was built against plugin ABI version " +
                    std::to_string(table->abi_version) + ", this posenc speaks version " +
                    std::to_string(POSENC_PLUGIN_ABI_VERSION) +
                    "; rebuild it against this posenc's posenc/plugin.h");
  if (table->count > kMaxKernels)
    throw LoadError("the table claims " + std::to_string(table->count) + " kernels (at most " +
                    std::to_string(kMaxKernels) + ")");
  if (table->count > 0 && table->kernels == nullptr)
    throw LoadError("the table has " + std::to_string(table->count) + " kernels but no array");
  return *table;
}

std::string kernel_name(const posenc_kernel& k) {
  return k.name ? std::string(k.name, strnlen(k.name, kMaxName + 1)) : std::string();
}

// Checks one entry; the problem, or "" when it is well formed.
std::string entry_problem(const posenc_kernel& k) {
  const std::string name = kernel_name(k);
  if (k.name == nullptr) return "has no name";
  if (name.empty() || name.size() > kMaxName)
    return "name must have 1 to " + std::to_string(kMaxName) + " characters";
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-')
      return "name '" + name + "' may hold only letters, digits and _ . -";
  if (k.family > POSENC_FAMILY_T5)
    return "family " + std::to_string(k.family) + " is not a posenc family (0 to 7)";
  if (!has_function(k)) return "has no function for its family";
  if (!std::isfinite(k.bound) || k.bound < 0)
    return "bound " + std::to_string(k.bound) + " must be finite and >= 0";
  return "";
}

// The child's half of load(): the table's entries, checked, as wire bytes.
std::string read_table(const std::string& path) {
  const posenc_plugin& table = open_table(path);
  WireWriter out;
  out.put(table.count);
  std::set<std::pair<uint32_t, std::string>> names;
  for (uint32_t i = 0; i < table.count; ++i) {
    const posenc_kernel& k = table.kernels[i];
    const std::string problem = entry_problem(k);
    if (!problem.empty()) throw LoadError("kernel #" + std::to_string(i) + " " + problem);
    if (!names.emplace(k.family, kernel_name(k)).second)
      throw LoadError("two " + std::string(family_name(static_cast<Family>(k.family))) +
                      " kernels are named '" + kernel_name(k) + "'");
    out.put(kernel_name(k)).put(k.family).put(k.flags).put(k.variants).put(k.bound);
  }
  return out.take();
}

// ---- Running a kernel ----

struct Source {
  std::string path, kernel, impl;  // library, kernel's own name, registry name
  uint32_t index = 0;
  std::chrono::duration<double> timeout;
};

std::string join(const std::vector<std::string>& parts) {
  std::string text;
  for (const auto& p : parts) text += (text.empty() ? "" : ", ") + p;
  return text;
}

// One library's kernels run here: a persistent child (Worker) that opens the library once, and
// the shared memory their calls' tensors and arguments are mirrored into. Outside a call the
// child keeps all of that memory inaccessible; a call opens exactly its own pages.
class Host {
 public:
  Host(const std::string& path, size_t memory_limit)
      : worker_(
            [path, base = memory_.base(), size = memory_.size(),
             table = static_cast<const posenc_plugin*>(nullptr)](std::string_view request) mutable {
              return serve(path, base, size, table, request);
            },
            memory_limit) {}
  int& hangs() { return hangs_; }

  std::mutex& mutex() { return mutex_; }
  SharedMemory& memory() { return memory_; }
  Isolated call(uint32_t index, const std::string& kernel, const void* args,
                const std::vector<std::pair<uint8_t*, size_t>>& writable,
                const std::vector<std::pair<uint8_t*, size_t>>& readable,
                std::chrono::duration<double> timeout) {
    WireWriter request;
    request.put(index)
        .put(kernel)
        .put(offset(args))
        .put<uint64_t>(writable.size() + readable.size());
    for (const auto& [pages, size] : writable)
      request.put(offset(pages)).put(size).put(PROT_READ | PROT_WRITE);
    for (const auto& [pages, size] : readable) request.put(offset(pages)).put(size).put(PROT_READ);
    return worker_.call(request.take(), timeout);
  }

 private:
  uint64_t offset(const void* at) const {
    return static_cast<uint64_t>(static_cast<const uint8_t*>(at) - memory_.base());
  }

  // The child's side of one call: open the library the first time, open the call's pages, run
  // the kernel, close the pages again; the reply is the code and the error fields.
  static std::string serve(const std::string& path, uint8_t* base, size_t size,
                           const posenc_plugin*& table, std::string_view request) {
    if (table == nullptr) {
      mprotect(base, size, PROT_NONE);
      table = &open_table(path);
    }
    WireReader in(request);
    const auto index = in.get<uint32_t>();
    const std::string kernel = in.get_string();
    const auto args = in.get<uint64_t>();
    std::vector<std::tuple<uint64_t, uint64_t, int>> pages(in.get<uint64_t>());
    for (auto& [at, length, protection] : pages) {
      at = in.get<uint64_t>();
      length = in.get<uint64_t>();
      protection = in.get<int>();
    }
    if (index >= table->count || kernel_name(table->kernels[index]) != kernel)
      throw LoadError("the library's table changed since it was loaded");
    for (const auto& [at, length, protection] : pages) mprotect(base + at, length, protection);
    posenc_error error{};
    const int code = invoke(table->kernels[index], base + args, &error);
    for (const auto& [at, length, protection] : pages) mprotect(base + at, length, PROT_NONE);
    auto text = [](const char* field, size_t n) {
      return std::string_view(field, strnlen(field, n));
    };
    return WireWriter()
        .put(code)
        .put(text(error.argument, sizeof error.argument))
        .put(text(error.value, sizeof error.value))
        .put(text(error.message, sizeof error.message))
        .take();
  }

  SharedMemory memory_;  // before worker_: the child must inherit it
  Worker worker_;
  std::mutex mutex_;
  int hangs_ = 0;
};

template <class Call>
void run_kernel(const Source& source, Host& host, const Call& call) {
  std::lock_guard lock(host.mutex());
  if (host.hangs() >= kMaxHangs)
    throw KernelFailure(source.impl + " not called: its library hung " + std::to_string(kMaxHangs) +
                        " times already");
  host.memory().reset();
  Call copy = call;
  Block block(host.memory());
  Tensors tensors(host.memory(), block);
  const auto args = c_args(copy, tensors);
  tensors.map();
  const auto* shared_args = block.put(args);
  const Isolated isolated =
      host.call(source.index, source.kernel, shared_args, tensors.mirror().accessible(),
                block.chunks(), source.timeout);
  // Copy back first, even after a crash: the caller's guard bytes then show what it wrote.
  const auto stray = tensors.mirror().copy_back();
  switch (isolated.status) {
    case Isolated::Status::ok:
      break;
    case Isolated::Status::threw:
      throw KernelFailure(source.impl + " could not run: " + isolated.error);
    case Isolated::Status::crashed:
      throw KernelFailure(source.impl + " crashed: " + isolated.describe());
    case Isolated::Status::timed_out:
      ++host.hangs();
      throw KernelFailure(source.impl + " hung: " + isolated.describe());
    case Isolated::Status::broke:
      throw KernelFailure(source.impl + " " + isolated.describe());
  }
  if (stray) throw KernelFailure(source.impl + " wrote outside its tensors: " + *stray);
  int code;
  std::string argument, value, message;
  try {  // the reply's bytes came from the child: trust none of them
    WireReader reply(isolated.result);
    code = reply.get<int>();
    argument = reply.get_string(), value = reply.get_string(), message = reply.get_string();
    if (!reply.done()) throw std::runtime_error("bytes after its end");
  } catch (const std::runtime_error& e) {
    throw KernelFailure(source.impl + " sent a malformed reply: " + e.what());
  }
  if (code == POSENC_INVALID_ARGUMENT) throw Error(argument, value, message);
  if (code != POSENC_OK)
    throw KernelFailure(source.impl + " failed (code " + std::to_string(code) + "): " + message);
  if (!tensors.mirror().unmirrored().empty())
    throw KernelFailure(source.impl + " accepted views posenc could not mirror: " +
                        join(tensors.mirror().unmirrored()));
}

template <class Call>
void add_kernel(std::vector<Impl<Call>>& to, Source source, const std::shared_ptr<Host>& host,
                uint32_t flags, uint64_t variants, double bound) {
  auto shared = std::make_shared<const Source>(std::move(source));
  to.push_back({.name = shared->impl,
                .variants = variants,
                .bound = bound,
                .run = [shared, host](const Call& call) { run_kernel(*shared, *host, call); },
                .unavailable = nullptr,
                .threaded = (flags & POSENC_KERNEL_THREADED) != 0});
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
    const auto variants = table.get<uint64_t>();
    const auto bound = table.get<double>();
    if (family > POSENC_FAMILY_T5 || source.kernel.empty() || source.kernel.size() > kMaxName)
      throw std::runtime_error("kernel #" + std::to_string(i) + " is not what the child checked");
    source.impl = std::string(family_name(static_cast<Family>(family))) + "/" + source.kernel;
    std::apply(
        [&](auto&... lists) {
          auto add = [&](auto& list) {
            using Call = typename CallOf<std::decay_t<decltype(list)>>::type;
            if (static_cast<uint32_t>(Call::kFamily) == family)
              add_kernel(list, source, host, flags, variants, bound);
          };
          (add(lists), ...);
        },
        plugin.kernels_);
  }
  if (!table.done()) throw std::runtime_error("bytes after its end");
}

}  // namespace posenc::plugin
