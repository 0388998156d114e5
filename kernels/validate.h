// Helpers that build the one error format every validation in blocktune
// uses: the field's path, the allowed range, and the value that was given.
//   "context.gemm.m must be in [1, 2147483647], got 0"
#ifndef BLOCKTUNE_KERNELS_VALIDATE_H_
#define BLOCKTUNE_KERNELS_VALIDATE_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kernels/status.h"

namespace blocktune {

// Joins a field path: JoinField("context", "m") == "context.m"; an empty
// prefix yields just the name.
std::string JoinField(std::string_view prefix, std::string_view name);

// OK if lo <= value <= hi, else INVALID_ARGUMENT naming `field` and the range.
Status CheckRange(std::string_view field, int64_t value, int64_t lo,
                  int64_t hi);

// a * b, or INVALID_ARGUMENT naming `what` when the product exceeds `limit`
// (or overflows int64). Both factors must be >= 0.
StatusOr<int64_t> CheckedProduct(std::string_view what, int64_t a, int64_t b,
                                 int64_t limit);

// Checks a free-form text field: length in [min_len, max_len] and printable
// ASCII only, so it can be shown in logs and terminals as is.
Status CheckText(std::string_view field, std::string_view value,
                 size_t min_len, size_t max_len);

// `text` in single quotes for an error message, cut after 64 bytes (and
// the number of bytes left out said), so that a huge field is never echoed
// whole into a response or a log.
std::string Quoted(std::string_view text);

// The words of `text`, split on spaces (runs of spaces count as one).
std::vector<std::string_view> SplitWords(std::string_view text);

// The whole of `text` as a decimal int64, or INVALID_ARGUMENT:
// "<field> must be an integer, got '<text>'".
StatusOr<int64_t> ParseInt64(std::string_view field, std::string_view text);

// Name table for an enum; every enum in blocktune has one, giving it
// ToString and FromString with the same spelling.
template <typename E, size_t N>
using EnumNames = std::array<std::pair<E, std::string_view>, N>;

std::string JoinNames(const std::string_view* names, size_t count);

template <typename E, size_t N>
std::string_view EnumToString(const EnumNames<E, N>& names, E value) {
  for (const auto& [v, name] : names)
    if (v == value) return name;
  return "unknown";
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// Parses `text` (case-insensitively) against the table, or INVALID_ARGUMENT:
// "dtype must be one of fp32, fp16, bf16, fp64; got 'fp8'".
template <typename E, size_t N>
StatusOr<E> EnumFromString(const EnumNames<E, N>& names, std::string_view text,
                           std::string_view field) {
  std::array<std::string_view, N> spelled;
  for (size_t i = 0; i < N; ++i) {
    if (EqualsIgnoreCase(names[i].second, text)) return names[i].first;
    spelled[i] = names[i].second;
  }
  return InvalidArgument(std::string(field) + " must be one of " +
                         JoinNames(spelled.data(), N) + "; got " +
                         Quoted(text));
}

}  // namespace blocktune

#endif  // BLOCKTUNE_KERNELS_VALIDATE_H_
