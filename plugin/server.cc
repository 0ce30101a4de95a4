#include "plugin/server.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <set>
#include <utility>

#include "plugin/isolate.h"
#include "plugin/loader.h"
#include "posenc/kernel.h"
#include "posenc/plugin/attention.h"  // version 1's struct

namespace posenc::plugin {

namespace {

FaultRecord* fault_record = nullptr;  // the child's, for its handler

// Records where the kernel faulted; the handler then resets itself (SA_RESETHAND) and returns, so
// the access faults again and the child dies of the signal as it would have.
void record_fault(int signal, siginfo_t* info, void* context) {
  if (fault_record == nullptr) return;
  fault_record->signal = signal;
  fault_record->address = reinterpret_cast<uintptr_t>(info->si_addr);
#if defined(__x86_64__)
  // The page-fault error code: bit 1 set for a write.
  const auto* uc = static_cast<const ucontext_t*>(context);
  fault_record->access = (uc->uc_mcontext.gregs[REG_ERR] & 2) ? kFaultWrite : kFaultRead;
#else
  (void)context;
  fault_record->access = 0;
#endif
}

void watch_faults(FaultRecord* record) {
  fault_record = record;
  if (record == nullptr) return;
  *record = {};
  struct sigaction action {};
  action.sa_sigaction = record_fault;
  action.sa_flags = SA_SIGINFO | SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  sigaction(SIGSEGV, &action, nullptr);
  sigaction(SIGBUS, &action, nullptr);
}

// A version-1 table's entry: version 2's without its trailing accuracy-envelope fields.
struct posenc_kernel_v1 {
  const char* name;
  uint32_t family;
  uint32_t flags;
  uint64_t variants;
  double bound;
  decltype(posenc_kernel::run) run;
};

// Version 1's attention arguments: version 3's without window_left, softcap and the version-3
// fields, with threads right after scale.
struct posenc_attention_args_v1 {
  const DLTensor *q, *k, *v, *out;
  int32_t mask;
  const DLTensor *q_positions, *k_positions, *bias;
  double scale;
  int32_t threads;
};

// A version-2 table's entry: version 3's without its trailing conventions.
struct posenc_kernel_v2 {
  posenc_kernel_v1 v1;
  double bound_bf16, bound_f16;
  int64_t max_position;
};

// The variant bits of `family` that a kernel built against `version` cannot know: a later
// version's, whose argument fields it does not read.
uint64_t later_variants(uint32_t version, uint32_t family) {
  if (family != POSENC_FAMILY_ATTENTION) return 0;
  uint64_t bits = 0;
  if (version < 2) bits |= POSENC_VARIANT_ATTENTION_WINDOW | POSENC_VARIANT_ATTENTION_SOFTCAP;
  if (version < 3)
    bits |= POSENC_VARIANT_ATTENTION_LSE | POSENC_VARIANT_ATTENTION_CHUNKED |
            POSENC_VARIANT_ATTENTION_SINKS | POSENC_VARIANT_ATTENTION_ALIBI;
  return bits;
}

// Entry i of `table`, as version 3 reads it (a version-1 entry gets zero envelope fields and a
// version-2 one no conventions, which mean what those versions meant), without the variant bits
// of later versions.
posenc_kernel entry(const posenc_plugin& table, uint32_t i) {
  if (table.abi_version == POSENC_PLUGIN_ABI_VERSION) return table.kernels[i];
  const posenc_kernel_v1& old = table.abi_version == 2
                                    ? reinterpret_cast<const posenc_kernel_v2*>(table.kernels)[i].v1
                                    : reinterpret_cast<const posenc_kernel_v1*>(table.kernels)[i];
  posenc_kernel k{};
  k.name = old.name, k.family = old.family, k.flags = old.flags, k.variants = old.variants;
  k.bound = old.bound, k.run = old.run;
  if (table.abi_version == 2) {
    const auto& v2 = reinterpret_cast<const posenc_kernel_v2*>(table.kernels)[i];
    k.bound_bf16 = v2.bound_bf16, k.bound_f16 = v2.bound_f16, k.max_position = v2.max_position;
  }
  k.variants &= ~later_variants(table.abi_version, k.family);
  return k;
}

// Runs kernel k, of a table of version `abi_version`, on the argument struct of its family at
// `args` (this version's; a version-2 kernel reads its first part, a version-1 attention kernel
// gets a copy in version 1's layout).
int invoke(const posenc_kernel& k, uint32_t abi_version, const void* args, posenc_error* e) {
  if (abi_version == 1 && k.family == POSENC_FAMILY_ATTENTION) {
    const auto& a = *static_cast<const posenc_attention_args*>(args);
    const posenc_attention_args_v1 old{a.q,           a.k,           a.v,    a.out,   a.mask,
                                       a.q_positions, a.k_positions, a.bias, a.scale, a.threads};
    return k.run.attention(reinterpret_cast<const posenc_attention_args*>(&old), e);
  }
  switch (k.family) {
#define POSENC_FAMILY(name, Call, NAME) \
  case POSENC_FAMILY_##NAME:            \
    return k.run.name(static_cast<const posenc_##name##_args*>(args), e);
#include "posenc/families.inc"
  }
  throw LoadError("family " + std::to_string(k.family) + " is not a posenc family");
}

bool has_function(const posenc_kernel& k) {
  switch (k.family) {
#define POSENC_FAMILY(name, Call, NAME) \
  case POSENC_FAMILY_##NAME:            \
    return k.run.name != nullptr;
#include "posenc/families.inc"
  }
  return false;
}

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
  if (table->abi_version < 1 || table->abi_version > POSENC_PLUGIN_ABI_VERSION)
    throw LoadError("ABI version mismatch: the library was built against plugin ABI version " +
                    std::to_string(table->abi_version) + ", this posenc speaks version " +
                    std::to_string(POSENC_PLUGIN_ABI_VERSION) +
                    " (and 1 and 2); rebuild it against this posenc's posenc/plugin.h");
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
  if (k.family >= POSENC_FAMILY_COUNT)
    return "family " + std::to_string(k.family) + " is not a posenc family (0 to " +
           std::to_string(POSENC_FAMILY_COUNT - 1) + ")";
  if (!has_function(k)) return "has no function for its family";
  for (auto [field, bound] : {std::pair{"bound", k.bound}, std::pair{"bound_bf16", k.bound_bf16},
                              std::pair{"bound_f16", k.bound_f16}})
    if (!std::isfinite(bound) || bound < 0)
      return std::string(field) + " " + std::to_string(bound) + " must be finite and >= 0";
  if (k.max_position < 0)
    return "max_position " + std::to_string(k.max_position) + " must be >= 0 (0: no claim)";
  constexpr uint32_t known = POSENC_CONVENTION_YARN_TRUNCATE_ONLY |
                             POSENC_CONVENTION_FINITE_INPUTS | POSENC_CONVENTION_POSITIONS_I32 |
                             POSENC_CONVENTION_POSITIONS_I64;
  if (k.conventions & ~known)
    return "conventions " + std::to_string(k.conventions) +
           " has bits no POSENC_CONVENTION_* names";
  if ((k.conventions & POSENC_CONVENTION_POSITIONS_I32) &&
      (k.conventions & POSENC_CONVENTION_POSITIONS_I64))
    return "conventions declare both int32 only and int64 only positions";
  return "";
}

}  // namespace

std::string read_table(const std::string& path) {
  const posenc_plugin& table = open_table(path);
  WireWriter out;
  out.put(table.count);
  std::set<std::pair<uint32_t, std::string>> names;
  for (uint32_t i = 0; i < table.count; ++i) {
    const posenc_kernel k = entry(table, i);
    const std::string problem = entry_problem(k);
    if (!problem.empty()) throw LoadError("kernel #" + std::to_string(i) + " " + problem);
    if (!names.emplace(k.family, kernel_name(k)).second)
      throw LoadError("two " + std::string(family_name(static_cast<Family>(k.family))) +
                      " kernels are named '" + kernel_name(k) + "'");
    out.put(kernel_name(k)).put(k.family).put(k.flags).put(k.variants).put(k.bound);
    out.put(k.bound_bf16).put(k.bound_f16).put(k.max_position).put(k.conventions);
  }
  return out.take();
}

std::string CallRequest::encode() const {
  WireWriter out;
  out.put(index).put(kernel).put(args).put<uint64_t>(pages.size());
  for (const Pages& p : pages) out.put(p.offset).put(p.length).put(p.protection);
  out.put(calls);
  return out.take();
}

CallRequest CallRequest::decode(std::string_view bytes) {
  WireReader in(bytes);
  CallRequest r;
  r.index = in.get<uint32_t>();
  r.kernel = in.get_string();
  r.args = in.get<uint64_t>();
  r.pages.resize(in.get<uint64_t>());
  for (Pages& p : r.pages) {
    p.offset = in.get<uint64_t>();
    p.length = in.get<uint64_t>();
    p.protection = in.get<int>();
  }
  r.calls = in.get<uint32_t>();
  return r;
}

std::string serve(Served& served, std::string_view bytes) {
  if (served.table == nullptr) {
    mprotect(served.base, served.size, PROT_NONE);
    served.table = &open_table(served.path);
  }
  const CallRequest request = CallRequest::decode(bytes);
  const posenc_plugin& table = *served.table;
  if (request.index >= table.count || kernel_name(entry(table, request.index)) != request.kernel)
    throw LoadError("the library's table changed since it was loaded");
  for (const auto& p : request.pages) mprotect(served.base + p.offset, p.length, p.protection);
  posenc_error error{};
  watch_faults(served.fault);
  int code = POSENC_OK;
  for (uint32_t i = 0; i < request.calls && code == POSENC_OK; ++i)
    code =
        invoke(entry(table, request.index), table.abi_version, served.base + request.args, &error);
  for (const auto& p : request.pages) mprotect(served.base + p.offset, p.length, PROT_NONE);
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

}  // namespace posenc::plugin
