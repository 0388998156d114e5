#include "kernels/validate.h"

#include <cctype>
#include <charconv>
#include <limits>

namespace blocktune {

std::string JoinField(std::string_view prefix, std::string_view name) {
  if (prefix.empty()) return std::string(name);
  std::string out(prefix);
  out += '.';
  out += name;
  return out;
}

Status CheckRange(std::string_view field, int64_t value, int64_t lo,
                  int64_t hi) {
  if (value >= lo && value <= hi) return OkStatus();
  return InvalidArgument(std::string(field) + " must be in [" +
                         std::to_string(lo) + ", " + std::to_string(hi) +
                         "], got " + std::to_string(value));
}

StatusOr<int64_t> CheckedProduct(std::string_view what, int64_t a, int64_t b,
                                 int64_t limit) {
  int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product) || product > limit) {
    return InvalidArgument(std::string(what) + " must be at most " +
                           std::to_string(limit) + ", got " +
                           std::to_string(a) + " * " + std::to_string(b));
  }
  return product;
}

Status CheckText(std::string_view field, std::string_view value,
                 size_t min_len, size_t max_len) {
  if (value.size() < min_len || value.size() > max_len) {
    return InvalidArgument(std::string(field) + " must have " +
                           std::to_string(min_len) + " to " +
                           std::to_string(max_len) + " characters, got " +
                           std::to_string(value.size()));
  }
  for (unsigned char c : value) {
    if (c < 0x20 || c > 0x7e) {
      return InvalidArgument(std::string(field) +
                             " must be printable ASCII (0x20-0x7e)");
    }
  }
  return OkStatus();
}

std::string Quoted(std::string_view text) {
  constexpr size_t kShown = 64;
  if (text.size() <= kShown) return "'" + std::string(text) + "'";
  return "'" + std::string(text.substr(0, kShown)) + "'... (" +
         std::to_string(text.size() - kShown) + " more bytes)";
}

std::vector<std::string_view> SplitWords(std::string_view text) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    size_t j = i;
    while (j < text.size() && text[j] != ' ') ++j;
    if (j > i) words.push_back(text.substr(i, j - i));
    i = j;
  }
  return words;
}

StatusOr<int64_t> ParseInt64(std::string_view field, std::string_view text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(),
                                   value);
  if (ec != std::errc() || end != text.data() + text.size()) {
    return InvalidArgument(std::string(field) + " must be an integer, got " +
                           Quoted(text));
  }
  return value;
}

std::string JoinNames(const std::string_view* names, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) {
    if (i) out += ", ";
    out += names[i];
  }
  return out;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

}  // namespace blocktune
