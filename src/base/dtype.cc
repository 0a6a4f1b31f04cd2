#include "base/dtype.h"

#include <array>

namespace strata {
namespace {

struct Entry {
  uint32_t id;
  DTypeTraits traits;
};

// Block sizes and byte sizes follow the block structs of the GGUF/ggml quantization formats,
// e.g. block_q4_0 = {f16 d; uint8 qs[16]} = 18 bytes for 32 weights.
constexpr std::array<Entry, 32> kTable = {{
    {0, {"f32", 1, 4}},         {1, {"f16", 1, 2}},         {2, {"q4_0", 32, 18}},
    {3, {"q4_1", 32, 20}},      {6, {"q5_0", 32, 22}},      {7, {"q5_1", 32, 24}},
    {8, {"q8_0", 32, 34}},      {9, {"q8_1", 32, 36}},      {10, {"q2_K", 256, 84}},
    {11, {"q3_K", 256, 110}},   {12, {"q4_K", 256, 144}},   {13, {"q5_K", 256, 176}},
    {14, {"q6_K", 256, 210}},   {15, {"q8_K", 256, 292}},   {16, {"iq2_xxs", 256, 66}},
    {17, {"iq2_xs", 256, 74}},  {18, {"iq3_xxs", 256, 98}}, {19, {"iq1_s", 256, 50}},
    {20, {"iq4_nl", 32, 18}},   {21, {"iq3_s", 256, 110}},  {22, {"iq2_s", 256, 82}},
    {23, {"iq4_xs", 256, 136}}, {24, {"i8", 1, 1}},         {25, {"i16", 1, 2}},
    {26, {"i32", 1, 4}},        {27, {"i64", 1, 8}},        {28, {"f64", 1, 8}},
    {29, {"iq1_m", 256, 56}},   {30, {"bf16", 1, 2}},       {34, {"tq1_0", 256, 54}},
    {35, {"tq2_0", 256, 66}},   {39, {"mxfp4", 32, 17}},
}};

}  // namespace

std::optional<DTypeTraits> dtype_traits(uint32_t id) {
  for (const Entry& e : kTable) {
    if (e.id == id) return e.traits;
  }
  return std::nullopt;
}

DTypeTraits traits(DType type) { return *dtype_traits(static_cast<uint32_t>(type)); }

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const Entry& e : kTable) {
    if (e.traits.name == name) return static_cast<DType>(e.id);
  }
  return std::nullopt;
}

}  // namespace strata
