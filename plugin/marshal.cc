#include "plugin/marshal.h"

#include <string>

#include "plugin/loader.h"

namespace posenc::plugin {

// The C header spells posenc's enums and variant bits out; they must stay the same numbers (each
// family's own in plugin/<family>_args.cc).
// The family numbers of both come from families.inc; the ABI's must not move.
static_assert(POSENC_FAMILY_ATTENTION == 0 && POSENC_FAMILY_T5 == 7);
#define POSENC_FAMILY(name, Call, NAME) \
  static_assert(POSENC_FAMILY_##NAME == static_cast<int>(Family::name));
#include "posenc/families.inc"
static_assert(POSENC_VARIANT_F32 == variant::f32 && POSENC_VARIANT_BF16 == variant::bf16 &&
              POSENC_VARIANT_F16 == variant::f16 && POSENC_VARIANT_STRIDED == variant::strided &&
              POSENC_VARIANT_IN_PLACE == variant::in_place);
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

namespace {

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

}  // namespace

void* Block::allocate(size_t bytes, size_t align) {
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

const DLTensor* Tensors::operator()(const Tensor& view) const {
  for (const auto& [registered, dl] : entries_)
    if (registered == &view) return dl;
  throw std::logic_error("c_args passes a view that is not in its call's view table");
}

void Tensors::map() {
  mirror_.map();
  for (auto& [view, dl] : entries_) {
    // All kMaxRank entries, whatever the rank says: a bad-input rank stays readable.
    *dl = {.data = view->data,
           .device = {kDLCPU, 0},
           .ndim = view->rank,
           .dtype = dlpack_dtype(view->dtype),
           .shape = const_cast<int64_t*>(block_.copy(view->shape.data(), view->shape.size())),
           .strides = const_cast<int64_t*>(block_.copy(view->strides.data(), view->strides.size())),
           .byte_offset = 0};
  }
}

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

}  // namespace posenc::plugin
