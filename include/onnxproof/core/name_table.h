#pragma once
// One table per enum gives both directions, its name and parsing a name, so the spelling of a
// status or level lives in one place (report.json, tables and the command line all use it).

#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace onnxproof {

template <typename Enum, std::size_t N>
using NameTable = std::pair<Enum, std::string_view>[N];

/// The name of `value` in `table` (every enumerator is listed; an unlisted one is the first name).
template <typename Enum, std::size_t N>
constexpr std::string_view name_in(const NameTable<Enum, N>& table, Enum value) {
  for (const auto& [known, name] : table)
    if (known == value) return name;
  return table[0].second;
}

/// The enumerator `name` stands for; nullopt for any other text.
template <typename Enum, std::size_t N>
constexpr std::optional<Enum> parse_in(const NameTable<Enum, N>& table, std::string_view name) {
  for (const auto& [value, known] : table)
    if (known == name) return value;
  return std::nullopt;
}

}  // namespace onnxproof
