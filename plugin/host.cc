#include "plugin/host.h"

#include <sys/mman.h>

#include <new>

#include "plugin/loader.h"
#include "plugin/server.h"
#include "posenc/error.h"

namespace posenc::plugin {

namespace {

std::string join(const std::vector<std::string>& parts) {
  std::string text;
  for (const auto& p : parts) text += (text.empty() ? "" : ", ") + p;
  return text;
}

}  // namespace

namespace {

FaultRecord* shared_fault_record() {
  void* m =
      mmap(nullptr, sizeof(FaultRecord), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  return m == MAP_FAILED ? nullptr : new (m) FaultRecord{};
}

}  // namespace

Host::Host(const std::string& path, size_t memory_limit)
    : fault_(shared_fault_record()),
      worker_(
          [served =
               Served{
                   .path = path, .base = memory_.base(), .size = memory_.size(), .fault = fault_}](
              std::string_view request) mutable { return serve(served, request); },
          memory_limit) {}

Host::~Host() {
  if (fault_) munmap(fault_, sizeof(FaultRecord));
}

Isolated Host::call(const Source& source, const void* args,
                    const std::vector<std::pair<uint8_t*, size_t>>& writable,
                    const std::vector<std::pair<uint8_t*, size_t>>& readable, uint32_t calls) {
  CallRequest request{.index = source.index,
                      .kernel = source.kernel,
                      .args = offset(args),
                      .pages = {},
                      .calls = calls};
  for (const auto& [pages, size] : writable)
    request.pages.push_back({offset(pages), size, PROT_READ | PROT_WRITE});
  for (const auto& [pages, size] : readable)
    request.pages.push_back({offset(pages), size, PROT_READ});
  if (fault_) *fault_ = {};
  return worker_.call(request.encode(), source.timeout);
}

void finish_call(const Source& source, const Isolated& isolated, Tensors& tensors,
                 const FaultRecord& fault) {
  const auto stray = tensors.mirror().copy_back();
  switch (isolated.status) {
    case Isolated::Status::ok:
      break;
    case Isolated::Status::threw:
      throw KernelFailure(source.impl + " could not run: " + isolated.error);
    case Isolated::Status::crashed:
      if (fault.address != 0)
        if (auto where = tensors.mirror().fault_at(fault.address, fault.access == kFaultWrite))
          throw KernelFailure(source.impl + " " + *where + " (" + isolated.describe() + ")");
      throw KernelFailure(source.impl + " crashed: " + isolated.describe());
    case Isolated::Status::timed_out:
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

}  // namespace posenc::plugin
